; ModuleID = '<string>'
source_filename = "<string>"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Function Attrs: noinline
define internal i32 @main.aligned(ptr noalias align 64 dereferenceable(4096) %A, ptr noalias align 64 dereferenceable(4096) %B, ptr noalias align 64 dereferenceable(4096) %C) #0 {
entry:
  %.5 = alloca float, i64 1024, align 64
  br label %start

start:                                            ; preds = %entry
  %.6 = add i32 0, 1024
  br label %for.i

for.i:                                            ; preds = %for.i.next, %start
  %i = phi i32 [ 0, %start ], [ %.21, %for.i.next ]
  %.8 = icmp slt i32 %i, %.6
  br i1 %.8, label %for.i.body, label %for.i.end

for.i.body:                                       ; preds = %for.i
  %.10 = sext i32 %i to i64
  %.11 = getelementptr inbounds float, ptr %A, i64 %.10
  %.12 = load float, ptr %.11, align 4
  %.13 = sext i32 %i to i64
  %.14 = getelementptr inbounds float, ptr %B, i64 %.13
  %.15 = load float, ptr %.14, align 4
  %.16 = fadd contract float %.12, %.15
  %.17 = sext i32 %i to i64
  %.18 = getelementptr inbounds float, ptr %.5, i64 %.17
  store float %.16, ptr %.18, align 4
  br label %for.i.next

for.i.next:                                       ; preds = %for.i.body
  %.21 = add nsw i32 %i, 1
  br label %for.i

for.i.end:                                        ; preds = %for.i
  %.23 = add i32 0, 1024
  br label %for.i.1

for.i.1:                                          ; preds = %for.i.next.1, %for.i.end
  %i.1 = phi i32 [ 0, %for.i.end ], [ %.36, %for.i.next.1 ]
  %.25 = icmp slt i32 %i.1, %.23
  br i1 %.25, label %for.i.body.1, label %for.i.end.1

for.i.body.1:                                     ; preds = %for.i.1
  %.27 = sext i32 %i.1 to i64
  %.28 = getelementptr inbounds float, ptr %.5, i64 %.27
  %.29 = load float, ptr %.28, align 4
  %.30 = fcmp ogt float %.29, 0.000000e+00
  %.31 = select i1 %.30, float %.29, float 0.000000e+00
  %.32 = sext i32 %i.1 to i64
  %.33 = getelementptr inbounds float, ptr %C, i64 %.32
  store float %.31, ptr %.33, align 4
  br label %for.i.next.1

for.i.next.1:                                     ; preds = %for.i.body.1
  %.36 = add nsw i32 %i.1, 1
  br label %for.i.1

for.i.end.1:                                      ; preds = %for.i.1
  ret i32 0
}

define i32 @main(ptr %A, ptr %B, ptr %C) {
entry:
  %.5 = ptrtoint ptr %A to i64
  %.6 = and i64 %.5, 63
  %.7 = icmp ne i64 %.6, 0
  %.8 = or i1 false, %.7
  %.9 = ptrtoint ptr %B to i64
  %.10 = and i64 %.9, 63
  %.11 = icmp ne i64 %.10, 0
  %.12 = or i1 %.8, %.11
  %.13 = ptrtoint ptr %C to i64
  %.14 = and i64 %.13, 63
  %.15 = icmp ne i64 %.14, 0
  %.16 = or i1 %.12, %.15
  br i1 %.16, label %misaligned, label %call

misaligned:                                       ; preds = %entry
  ret i32 -2

call:                                             ; preds = %entry
  %.19 = call i32 @main.aligned(ptr %A, ptr %B, ptr %C)
  ret i32 %.19
}

attributes #0 = { noinline }
