define i32 @"__tvm_ffi_main"(ptr %"self", ptr %"args", i32 %"num_args", ptr %"result")
{
entry:
  %".6" = alloca [1024 x i8]
  %".264" = alloca [2 x i64]
  %".278" = alloca [1 x i64]
  br label %"start"
start:
  %".7" = icmp eq i32 %"num_args", 4
  %".8" = icmp eq i32 %"num_args", 2
  %".9" = or i1 %".7", %".8"
  br i1 %".9", label %"ok", label %"fail"
fail:
  %".11" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text", i32 %"num_args")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.1", ptr %".6")
  ret i32 -1
ok:
  %".14" = mul i32 0, 16
  %".15" = getelementptr i8, ptr %"args", i32 %".14"
  %".16" = load i32, ptr %".15"
  %".17" = getelementptr i8, ptr %".15", i64 8
  %".18" = load ptr, ptr %".17"
  %".19" = icmp eq i32 %".16", 70
  %".20" = icmp eq i32 %".16", 7
  %".21" = or i1 %".19", %".20"
  %".22" = icmp eq i32 %".16", 0
  %".23" = select  i1 %".22", ptr @"__tvm_ffi_main.text.3", ptr @"__tvm_ffi_main.text.2"
  %".24" = icmp eq i32 %".16", 1
  %".25" = select  i1 %".24", ptr @"__tvm_ffi_main.text.4", ptr %".23"
  %".26" = icmp eq i32 %".16", 2
  %".27" = select  i1 %".26", ptr @"__tvm_ffi_main.text.5", ptr %".25"
  %".28" = icmp eq i32 %".16", 3
  %".29" = select  i1 %".28", ptr @"__tvm_ffi_main.text.6", ptr %".27"
  %".30" = icmp eq i32 %".16", 4
  %".31" = select  i1 %".30", ptr @"__tvm_ffi_main.text.7", ptr %".29"
  %".32" = icmp eq i32 %".16", 5
  %".33" = select  i1 %".32", ptr @"__tvm_ffi_main.text.8", ptr %".31"
  %".34" = icmp eq i32 %".16", 6
  %".35" = select  i1 %".34", ptr @"__tvm_ffi_main.text.9", ptr %".33"
  %".36" = icmp eq i32 %".16", 7
  %".37" = select  i1 %".36", ptr @"__tvm_ffi_main.text.10", ptr %".35"
  %".38" = icmp eq i32 %".16", 8
  %".39" = select  i1 %".38", ptr @"__tvm_ffi_main.text.11", ptr %".37"
  %".40" = icmp eq i32 %".16", 9
  %".41" = select  i1 %".40", ptr @"__tvm_ffi_main.text.12", ptr %".39"
  %".42" = icmp eq i32 %".16", 11
  %".43" = select  i1 %".42", ptr @"__tvm_ffi_main.text.13", ptr %".41"
  %".44" = icmp eq i32 %".16", 12
  %".45" = select  i1 %".44", ptr @"__tvm_ffi_main.text.14", ptr %".43"
  %".46" = icmp eq i32 %".16", 65
  %".47" = select  i1 %".46", ptr @"__tvm_ffi_main.text.15", ptr %".45"
  %".48" = icmp eq i32 %".16", 66
  %".49" = select  i1 %".48", ptr @"__tvm_ffi_main.text.16", ptr %".47"
  %".50" = icmp eq i32 %".16", 68
  %".51" = select  i1 %".50", ptr @"__tvm_ffi_main.text.17", ptr %".49"
  %".52" = icmp eq i32 %".16", 69
  %".53" = select  i1 %".52", ptr @"__tvm_ffi_main.text.18", ptr %".51"
  %".54" = icmp eq i32 %".16", 70
  %".55" = select  i1 %".54", ptr @"__tvm_ffi_main.text.19", ptr %".53"
  %".56" = icmp eq i32 %".16", 71
  %".57" = select  i1 %".56", ptr @"__tvm_ffi_main.text.20", ptr %".55"
  %".58" = icmp eq i32 %".16", 72
  %".59" = select  i1 %".58", ptr @"__tvm_ffi_main.text.21", ptr %".57"
  br i1 %".21", label %"ok.1", label %"fail.1"
fail.1:
  %".61" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.22", ptr %".59")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.23", ptr %".6")
  ret i32 -1
ok.1:
  %".64" = getelementptr i8, ptr %".18", i64 24
  %".65" = select  i1 %".19", ptr %".64", ptr %".18"
  %".66" = getelementptr i8, ptr %".65", i64 8
  %".67" = load i32, ptr %".66"
  %".68" = icmp eq i32 %".67", 1
  %".69" = icmp eq i32 %".67", 1
  %".70" = select  i1 %".69", ptr @"__tvm_ffi_main.text.25", ptr @"__tvm_ffi_main.text.24"
  %".71" = icmp eq i32 %".67", 2
  %".72" = select  i1 %".71", ptr @"__tvm_ffi_main.text.26", ptr %".70"
  %".73" = icmp eq i32 %".67", 3
  %".74" = select  i1 %".73", ptr @"__tvm_ffi_main.text.27", ptr %".72"
  %".75" = icmp eq i32 %".67", 4
  %".76" = select  i1 %".75", ptr @"__tvm_ffi_main.text.28", ptr %".74"
  %".77" = icmp eq i32 %".67", 7
  %".78" = select  i1 %".77", ptr @"__tvm_ffi_main.text.29", ptr %".76"
  %".79" = icmp eq i32 %".67", 8
  %".80" = select  i1 %".79", ptr @"__tvm_ffi_main.text.30", ptr %".78"
  %".81" = icmp eq i32 %".67", 10
  %".82" = select  i1 %".81", ptr @"__tvm_ffi_main.text.31", ptr %".80"
  %".83" = icmp eq i32 %".67", 13
  %".84" = select  i1 %".83", ptr @"__tvm_ffi_main.text.32", ptr %".82"
  %".85" = icmp eq i32 %".67", 14
  %".86" = select  i1 %".85", ptr @"__tvm_ffi_main.text.33", ptr %".84"
  br i1 %".68", label %"ok.2", label %"fail.2"
fail.2:
  %".88" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.34", ptr %".86")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.35", ptr %".6")
  ret i32 -1
ok.2:
  %".91" = getelementptr i8, ptr %".65", i64 16
  %".92" = load i32, ptr %".91"
  %".93" = icmp eq i32 %".92", 2
  br i1 %".93", label %"ok.3", label %"fail.3"
fail.3:
  %".95" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.36", i32 %".92")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.37", ptr %".6")
  ret i32 -1
ok.3:
  %".98" = getelementptr i8, ptr %".65", i64 20
  %".99" = load i8, ptr %".98"
  %".100" = zext i8 %".99" to i32
  %".101" = getelementptr i8, ptr %".65", i64 21
  %".102" = load i8, ptr %".101"
  %".103" = zext i8 %".102" to i32
  %".104" = getelementptr i8, ptr %".65", i64 22
  %".105" = load i16, ptr %".104"
  %".106" = zext i16 %".105" to i32
  %".107" = icmp eq i32 %".100", 2
  %".108" = icmp eq i32 %".103", 32
  %".109" = and i1 %".107", %".108"
  %".110" = icmp eq i32 %".106", 1
  %".111" = and i1 %".109", %".110"
  %".112" = icmp eq i32 %".106", 1
  %".113" = select  i1 %".112", ptr @"__tvm_ffi_main.text.38", ptr @"__tvm_ffi_main.text.39"
  %".114" = icmp eq i32 %".100", 0
  %".115" = select  i1 %".114", ptr @"__tvm_ffi_main.text.41", ptr @"__tvm_ffi_main.text.40"
  %".116" = icmp eq i32 %".100", 1
  %".117" = select  i1 %".116", ptr @"__tvm_ffi_main.text.42", ptr %".115"
  %".118" = icmp eq i32 %".100", 2
  %".119" = select  i1 %".118", ptr @"__tvm_ffi_main.text.43", ptr %".117"
  %".120" = icmp eq i32 %".100", 3
  %".121" = select  i1 %".120", ptr @"__tvm_ffi_main.text.44", ptr %".119"
  %".122" = icmp eq i32 %".100", 4
  %".123" = select  i1 %".122", ptr @"__tvm_ffi_main.text.45", ptr %".121"
  %".124" = icmp eq i32 %".100", 5
  %".125" = select  i1 %".124", ptr @"__tvm_ffi_main.text.46", ptr %".123"
  %".126" = icmp eq i32 %".100", 6
  %".127" = select  i1 %".126", ptr @"__tvm_ffi_main.text.47", ptr %".125"
  br i1 %".111", label %"ok.4", label %"fail.4"
fail.4:
  %".129" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr %".113", ptr %".127", i32 %".103", i32 %".106")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.48", ptr %".6")
  ret i32 -1
ok.4:
  %".132" = getelementptr i8, ptr %".65", i64 24
  %".133" = load ptr, ptr %".132"
  %".134" = load i64, ptr %".133"
  %".135" = getelementptr i8, ptr %".133", i64 8
  %".136" = load i64, ptr %".135"
  %".137" = mul i32 1, 16
  %".138" = getelementptr i8, ptr %"args", i32 %".137"
  %".139" = load i32, ptr %".138"
  %".140" = getelementptr i8, ptr %".138", i64 8
  %".141" = load ptr, ptr %".140"
  %".142" = icmp eq i32 %".139", 70
  %".143" = icmp eq i32 %".139", 7
  %".144" = or i1 %".142", %".143"
  %".145" = icmp eq i32 %".139", 0
  %".146" = select  i1 %".145", ptr @"__tvm_ffi_main.text.50", ptr @"__tvm_ffi_main.text.49"
  %".147" = icmp eq i32 %".139", 1
  %".148" = select  i1 %".147", ptr @"__tvm_ffi_main.text.51", ptr %".146"
  %".149" = icmp eq i32 %".139", 2
  %".150" = select  i1 %".149", ptr @"__tvm_ffi_main.text.52", ptr %".148"
  %".151" = icmp eq i32 %".139", 3
  %".152" = select  i1 %".151", ptr @"__tvm_ffi_main.text.53", ptr %".150"
  %".153" = icmp eq i32 %".139", 4
  %".154" = select  i1 %".153", ptr @"__tvm_ffi_main.text.54", ptr %".152"
  %".155" = icmp eq i32 %".139", 5
  %".156" = select  i1 %".155", ptr @"__tvm_ffi_main.text.55", ptr %".154"
  %".157" = icmp eq i32 %".139", 6
  %".158" = select  i1 %".157", ptr @"__tvm_ffi_main.text.56", ptr %".156"
  %".159" = icmp eq i32 %".139", 7
  %".160" = select  i1 %".159", ptr @"__tvm_ffi_main.text.57", ptr %".158"
  %".161" = icmp eq i32 %".139", 8
  %".162" = select  i1 %".161", ptr @"__tvm_ffi_main.text.58", ptr %".160"
  %".163" = icmp eq i32 %".139", 9
  %".164" = select  i1 %".163", ptr @"__tvm_ffi_main.text.59", ptr %".162"
  %".165" = icmp eq i32 %".139", 11
  %".166" = select  i1 %".165", ptr @"__tvm_ffi_main.text.60", ptr %".164"
  %".167" = icmp eq i32 %".139", 12
  %".168" = select  i1 %".167", ptr @"__tvm_ffi_main.text.61", ptr %".166"
  %".169" = icmp eq i32 %".139", 65
  %".170" = select  i1 %".169", ptr @"__tvm_ffi_main.text.62", ptr %".168"
  %".171" = icmp eq i32 %".139", 66
  %".172" = select  i1 %".171", ptr @"__tvm_ffi_main.text.63", ptr %".170"
  %".173" = icmp eq i32 %".139", 68
  %".174" = select  i1 %".173", ptr @"__tvm_ffi_main.text.64", ptr %".172"
  %".175" = icmp eq i32 %".139", 69
  %".176" = select  i1 %".175", ptr @"__tvm_ffi_main.text.65", ptr %".174"
  %".177" = icmp eq i32 %".139", 70
  %".178" = select  i1 %".177", ptr @"__tvm_ffi_main.text.66", ptr %".176"
  %".179" = icmp eq i32 %".139", 71
  %".180" = select  i1 %".179", ptr @"__tvm_ffi_main.text.67", ptr %".178"
  %".181" = icmp eq i32 %".139", 72
  %".182" = select  i1 %".181", ptr @"__tvm_ffi_main.text.68", ptr %".180"
  br i1 %".144", label %"ok.5", label %"fail.5"
fail.5:
  %".184" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.69", ptr %".182")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.70", ptr %".6")
  ret i32 -1
ok.5:
  %".187" = getelementptr i8, ptr %".141", i64 24
  %".188" = select  i1 %".142", ptr %".187", ptr %".141"
  %".189" = getelementptr i8, ptr %".188", i64 8
  %".190" = load i32, ptr %".189"
  %".191" = icmp eq i32 %".190", 1
  %".192" = icmp eq i32 %".190", 1
  %".193" = select  i1 %".192", ptr @"__tvm_ffi_main.text.72", ptr @"__tvm_ffi_main.text.71"
  %".194" = icmp eq i32 %".190", 2
  %".195" = select  i1 %".194", ptr @"__tvm_ffi_main.text.73", ptr %".193"
  %".196" = icmp eq i32 %".190", 3
  %".197" = select  i1 %".196", ptr @"__tvm_ffi_main.text.74", ptr %".195"
  %".198" = icmp eq i32 %".190", 4
  %".199" = select  i1 %".198", ptr @"__tvm_ffi_main.text.75", ptr %".197"
  %".200" = icmp eq i32 %".190", 7
  %".201" = select  i1 %".200", ptr @"__tvm_ffi_main.text.76", ptr %".199"
  %".202" = icmp eq i32 %".190", 8
  %".203" = select  i1 %".202", ptr @"__tvm_ffi_main.text.77", ptr %".201"
  %".204" = icmp eq i32 %".190", 10
  %".205" = select  i1 %".204", ptr @"__tvm_ffi_main.text.78", ptr %".203"
  %".206" = icmp eq i32 %".190", 13
  %".207" = select  i1 %".206", ptr @"__tvm_ffi_main.text.79", ptr %".205"
  %".208" = icmp eq i32 %".190", 14
  %".209" = select  i1 %".208", ptr @"__tvm_ffi_main.text.80", ptr %".207"
  br i1 %".191", label %"ok.6", label %"fail.6"
fail.6:
  %".211" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.81", ptr %".209")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.82", ptr %".6")
  ret i32 -1
ok.6:
  %".214" = getelementptr i8, ptr %".188", i64 16
  %".215" = load i32, ptr %".214"
  %".216" = icmp eq i32 %".215", 1
  br i1 %".216", label %"ok.7", label %"fail.7"
fail.7:
  %".218" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.83", i32 %".215")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.84", ptr %".6")
  ret i32 -1
ok.7:
  %".221" = getelementptr i8, ptr %".188", i64 20
  %".222" = load i8, ptr %".221"
  %".223" = zext i8 %".222" to i32
  %".224" = getelementptr i8, ptr %".188", i64 21
  %".225" = load i8, ptr %".224"
  %".226" = zext i8 %".225" to i32
  %".227" = getelementptr i8, ptr %".188", i64 22
  %".228" = load i16, ptr %".227"
  %".229" = zext i16 %".228" to i32
  %".230" = icmp eq i32 %".223", 2
  %".231" = icmp eq i32 %".226", 32
  %".232" = and i1 %".230", %".231"
  %".233" = icmp eq i32 %".229", 1
  %".234" = and i1 %".232", %".233"
  %".235" = icmp eq i32 %".229", 1
  %".236" = select  i1 %".235", ptr @"__tvm_ffi_main.text.85", ptr @"__tvm_ffi_main.text.86"
  %".237" = icmp eq i32 %".223", 0
  %".238" = select  i1 %".237", ptr @"__tvm_ffi_main.text.88", ptr @"__tvm_ffi_main.text.87"
  %".239" = icmp eq i32 %".223", 1
  %".240" = select  i1 %".239", ptr @"__tvm_ffi_main.text.89", ptr %".238"
  %".241" = icmp eq i32 %".223", 2
  %".242" = select  i1 %".241", ptr @"__tvm_ffi_main.text.90", ptr %".240"
  %".243" = icmp eq i32 %".223", 3
  %".244" = select  i1 %".243", ptr @"__tvm_ffi_main.text.91", ptr %".242"
  %".245" = icmp eq i32 %".223", 4
  %".246" = select  i1 %".245", ptr @"__tvm_ffi_main.text.92", ptr %".244"
  %".247" = icmp eq i32 %".223", 5
  %".248" = select  i1 %".247", ptr @"__tvm_ffi_main.text.93", ptr %".246"
  %".249" = icmp eq i32 %".223", 6
  %".250" = select  i1 %".249", ptr @"__tvm_ffi_main.text.94", ptr %".248"
  br i1 %".234", label %"ok.8", label %"fail.8"
fail.8:
  %".252" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr %".236", ptr %".250", i32 %".226", i32 %".229")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.95", ptr %".6")
  ret i32 -1
ok.8:
  %".255" = getelementptr i8, ptr %".188", i64 24
  %".256" = load ptr, ptr %".255"
  %".257" = load i64, ptr %".256"
  %".258" = mul i64 1, %".136"
  %".259" = mul i64 %".258", %".134"
  %".260" = getelementptr i8, ptr %".65", i64 32
  %".261" = load ptr, ptr %".260"
  %".262" = ptrtoint ptr %".261" to i64
  %".263" = icmp eq i64 %".262", 0
  %".265" = getelementptr i8, ptr %".264", i64 0
  store i64 %".258", ptr %".265"
  %".267" = getelementptr i8, ptr %".264", i64 8
  store i64 1, ptr %".267"
  %".269" = select  i1 %".263", ptr %".264", ptr %".261"
  %".270" = load i64, ptr %".269"
  %".271" = getelementptr i8, ptr %".269", i64 8
  %".272" = load i64, ptr %".271"
  %".273" = mul i64 1, %".257"
  %".274" = getelementptr i8, ptr %".188", i64 32
  %".275" = load ptr, ptr %".274"
  %".276" = ptrtoint ptr %".275" to i64
  %".277" = icmp eq i64 %".276", 0
  %".279" = getelementptr i8, ptr %".278", i64 0
  store i64 1, ptr %".279"
  %".281" = select  i1 %".277", ptr %".278", ptr %".275"
  %".282" = load i64, ptr %".281"
  br i1 %".7", label %"ok.8.if", label %"ok.8.endif"
ok.8.if:
  %".284" = getelementptr i8, ptr %"args", i32 32
  %".285" = load i32, ptr %".284"
  %".286" = icmp eq i32 %".285", 1
  %".287" = or i1 0, %".286"
  %".288" = icmp eq i32 %".285", 2
  %".289" = or i1 %".287", %".288"
  %".290" = icmp eq i32 %".285", 0
  %".291" = select  i1 %".290", ptr @"__tvm_ffi_main.text.97", ptr @"__tvm_ffi_main.text.96"
  %".292" = icmp eq i32 %".285", 1
  %".293" = select  i1 %".292", ptr @"__tvm_ffi_main.text.98", ptr %".291"
  %".294" = icmp eq i32 %".285", 2
  %".295" = select  i1 %".294", ptr @"__tvm_ffi_main.text.99", ptr %".293"
  %".296" = icmp eq i32 %".285", 3
  %".297" = select  i1 %".296", ptr @"__tvm_ffi_main.text.100", ptr %".295"
  %".298" = icmp eq i32 %".285", 4
  %".299" = select  i1 %".298", ptr @"__tvm_ffi_main.text.101", ptr %".297"
  %".300" = icmp eq i32 %".285", 5
  %".301" = select  i1 %".300", ptr @"__tvm_ffi_main.text.102", ptr %".299"
  %".302" = icmp eq i32 %".285", 6
  %".303" = select  i1 %".302", ptr @"__tvm_ffi_main.text.103", ptr %".301"
  %".304" = icmp eq i32 %".285", 7
  %".305" = select  i1 %".304", ptr @"__tvm_ffi_main.text.104", ptr %".303"
  %".306" = icmp eq i32 %".285", 8
  %".307" = select  i1 %".306", ptr @"__tvm_ffi_main.text.105", ptr %".305"
  %".308" = icmp eq i32 %".285", 9
  %".309" = select  i1 %".308", ptr @"__tvm_ffi_main.text.106", ptr %".307"
  %".310" = icmp eq i32 %".285", 11
  %".311" = select  i1 %".310", ptr @"__tvm_ffi_main.text.107", ptr %".309"
  %".312" = icmp eq i32 %".285", 12
  %".313" = select  i1 %".312", ptr @"__tvm_ffi_main.text.108", ptr %".311"
  %".314" = icmp eq i32 %".285", 65
  %".315" = select  i1 %".314", ptr @"__tvm_ffi_main.text.109", ptr %".313"
  %".316" = icmp eq i32 %".285", 66
  %".317" = select  i1 %".316", ptr @"__tvm_ffi_main.text.110", ptr %".315"
  %".318" = icmp eq i32 %".285", 68
  %".319" = select  i1 %".318", ptr @"__tvm_ffi_main.text.111", ptr %".317"
  %".320" = icmp eq i32 %".285", 69
  %".321" = select  i1 %".320", ptr @"__tvm_ffi_main.text.112", ptr %".319"
  %".322" = icmp eq i32 %".285", 70
  %".323" = select  i1 %".322", ptr @"__tvm_ffi_main.text.113", ptr %".321"
  %".324" = icmp eq i32 %".285", 71
  %".325" = select  i1 %".324", ptr @"__tvm_ffi_main.text.114", ptr %".323"
  %".326" = icmp eq i32 %".285", 72
  %".327" = select  i1 %".326", ptr @"__tvm_ffi_main.text.115", ptr %".325"
  br i1 %".289", label %"ok.9", label %"fail.9"
ok.8.endif:
  %".335" = phi  i64 [%".134", %"ok.8"], [%".333", %"ok.9"]
  br i1 %".7", label %"ok.8.endif.if", label %"ok.8.endif.endif"
fail.9:
  %".329" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.116", ptr %".327")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.117", ptr %".6")
  ret i32 -1
ok.9:
  %".332" = getelementptr i8, ptr %".284", i64 8
  %".333" = load i64, ptr %".332"
  br label %"ok.8.endif"
ok.8.endif.if:
  %".337" = getelementptr i8, ptr %"args", i32 48
  %".338" = load i32, ptr %".337"
  %".339" = icmp eq i32 %".338", 1
  %".340" = or i1 0, %".339"
  %".341" = icmp eq i32 %".338", 2
  %".342" = or i1 %".340", %".341"
  %".343" = icmp eq i32 %".338", 0
  %".344" = select  i1 %".343", ptr @"__tvm_ffi_main.text.119", ptr @"__tvm_ffi_main.text.118"
  %".345" = icmp eq i32 %".338", 1
  %".346" = select  i1 %".345", ptr @"__tvm_ffi_main.text.120", ptr %".344"
  %".347" = icmp eq i32 %".338", 2
  %".348" = select  i1 %".347", ptr @"__tvm_ffi_main.text.121", ptr %".346"
  %".349" = icmp eq i32 %".338", 3
  %".350" = select  i1 %".349", ptr @"__tvm_ffi_main.text.122", ptr %".348"
  %".351" = icmp eq i32 %".338", 4
  %".352" = select  i1 %".351", ptr @"__tvm_ffi_main.text.123", ptr %".350"
  %".353" = icmp eq i32 %".338", 5
  %".354" = select  i1 %".353", ptr @"__tvm_ffi_main.text.124", ptr %".352"
  %".355" = icmp eq i32 %".338", 6
  %".356" = select  i1 %".355", ptr @"__tvm_ffi_main.text.125", ptr %".354"
  %".357" = icmp eq i32 %".338", 7
  %".358" = select  i1 %".357", ptr @"__tvm_ffi_main.text.126", ptr %".356"
  %".359" = icmp eq i32 %".338", 8
  %".360" = select  i1 %".359", ptr @"__tvm_ffi_main.text.127", ptr %".358"
  %".361" = icmp eq i32 %".338", 9
  %".362" = select  i1 %".361", ptr @"__tvm_ffi_main.text.128", ptr %".360"
  %".363" = icmp eq i32 %".338", 11
  %".364" = select  i1 %".363", ptr @"__tvm_ffi_main.text.129", ptr %".362"
  %".365" = icmp eq i32 %".338", 12
  %".366" = select  i1 %".365", ptr @"__tvm_ffi_main.text.130", ptr %".364"
  %".367" = icmp eq i32 %".338", 65
  %".368" = select  i1 %".367", ptr @"__tvm_ffi_main.text.131", ptr %".366"
  %".369" = icmp eq i32 %".338", 66
  %".370" = select  i1 %".369", ptr @"__tvm_ffi_main.text.132", ptr %".368"
  %".371" = icmp eq i32 %".338", 68
  %".372" = select  i1 %".371", ptr @"__tvm_ffi_main.text.133", ptr %".370"
  %".373" = icmp eq i32 %".338", 69
  %".374" = select  i1 %".373", ptr @"__tvm_ffi_main.text.134", ptr %".372"
  %".375" = icmp eq i32 %".338", 70
  %".376" = select  i1 %".375", ptr @"__tvm_ffi_main.text.135", ptr %".374"
  %".377" = icmp eq i32 %".338", 71
  %".378" = select  i1 %".377", ptr @"__tvm_ffi_main.text.136", ptr %".376"
  %".379" = icmp eq i32 %".338", 72
  %".380" = select  i1 %".379", ptr @"__tvm_ffi_main.text.137", ptr %".378"
  br i1 %".342", label %"ok.10", label %"fail.10"
ok.8.endif.endif:
  %".388" = phi  i64 [%".270", %"ok.8.endif"], [%".386", %"ok.10"]
  %".389" = icmp eq i64 %".134", %".335"
  %".390" = select  i1 %".7", ptr @"__tvm_ffi_main.text.141", ptr @"__tvm_ffi_main.text.140"
  br i1 %".389", label %"ok.11", label %"fail.11"
fail.10:
  %".382" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.138", ptr %".380")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.139", ptr %".6")
  ret i32 -1
ok.10:
  %".385" = getelementptr i8, ptr %".337", i64 8
  %".386" = load i64, ptr %".385"
  br label %"ok.8.endif.endif"
fail.11:
  %".392" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.142", i64 %".134", i64 %".335", ptr %".390")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.143", ptr %".6")
  ret i32 -1
ok.11:
  %".395" = icmp eq i64 %".136", 4
  br i1 %".395", label %"ok.12", label %"fail.12"
fail.12:
  %".397" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.144", i64 %".136")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.145", ptr %".6")
  ret i32 -1
ok.12:
  %".400" = mul i64 1, %".136"
  %".401" = mul i64 %".400", %".134"
  %".402" = icmp eq i64 %".270", %".388"
  %".403" = select  i1 %".7", ptr @"__tvm_ffi_main.text.147", ptr @"__tvm_ffi_main.text.146"
  br i1 %".402", label %"ok.13", label %"fail.13"
fail.13:
  %".405" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.148", i64 %".270", i64 %".388", ptr %".403")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.149", ptr %".6")
  ret i32 -1
ok.13:
  %".408" = icmp eq i64 %".272", 1
  br i1 %".408", label %"ok.14", label %"fail.14"
fail.14:
  %".410" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.150", i64 %".272")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.151", ptr %".6")
  ret i32 -1
ok.14:
  %".413" = load ptr, ptr %".65"
  %".414" = getelementptr i8, ptr %".65", i64 40
  %".415" = load i64, ptr %".414"
  %".416" = getelementptr i8, ptr %".413", i64 %".415"
  %".417" = ptrtoint ptr %".416" to i64
  %".418" = and i64 %".417", 63
  %".419" = icmp eq i64 %".418", 0
  br i1 %".419", label %"ok.15", label %"fail.15"
fail.15:
  %".421" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.152", ptr %".416")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.153", ptr %".6")
  ret i32 -1
ok.15:
  %".424" = trunc i64 %".335" to i32
  %".425" = trunc i64 %".388" to i32
  %".426" = mul nsw i32 %".424", 4
  %".427" = sext i32 %".426" to i64
  %".428" = icmp eq i64 %".257", %".427"
  br i1 %".428", label %"ok.16", label %"fail.16"
fail.16:
  %".430" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.154", i64 %".257", i64 %".427")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.155", ptr %".6")
  ret i32 -1
ok.16:
  %".433" = mul i64 1, %".257"
  %".434" = icmp eq i64 %".282", 1
  %".435" = icmp eq i64 %".257", 1
  %".436" = or i1 %".434", %".435"
  br i1 %".436", label %"ok.17", label %"fail.17"
fail.17:
  %".438" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.156", i64 %".282", i64 1)
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.157", ptr %".6")
  ret i32 -1
ok.17:
  %".441" = load ptr, ptr %".188"
  %".442" = getelementptr i8, ptr %".188", i64 40
  %".443" = load i64, ptr %".442"
  %".444" = getelementptr i8, ptr %".441", i64 %".443"
  %".445" = ptrtoint ptr %".444" to i64
  %".446" = and i64 %".445", 63
  %".447" = icmp eq i64 %".446", 0
  br i1 %".447", label %"ok.18", label %"fail.18"
fail.18:
  %".449" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.158", ptr %".444")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.159", ptr %".6")
  ret i32 -1
ok.18:
  %".452" = call i32 @"main"(ptr %".416", ptr %".444", i64 %".335", i64 %".388")
  %".453" = icmp ne i32 %".452", -1
  br i1 %".453", label %"ok.19", label %"fail.19"
fail.19:
  %".455" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.160")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.161", ptr %".6")
  ret i32 -1
ok.19:
  %".458" = icmp eq i32 %".452", 0
  br i1 %".458", label %"ok.20", label %"fail.20"
fail.20:
  %".460" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.162", i32 %".452")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.163", ptr %".6")
  ret i32 -1
ok.20:
  ret i32 0
}
