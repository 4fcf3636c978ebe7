define i32 @"__tvm_ffi_main"(ptr %"self", ptr %"args", i32 %"num_args", ptr %"result")
{
entry:
  %".6" = alloca [1024 x i8]
  %".261" = alloca [1 x i64]
  %".271" = alloca [1 x i64]
  br label %"start"
start:
  %".7" = icmp eq i32 %"num_args", 3
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
  %".93" = icmp eq i32 %".92", 1
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
  %".135" = mul i32 1, 16
  %".136" = getelementptr i8, ptr %"args", i32 %".135"
  %".137" = load i32, ptr %".136"
  %".138" = getelementptr i8, ptr %".136", i64 8
  %".139" = load ptr, ptr %".138"
  %".140" = icmp eq i32 %".137", 70
  %".141" = icmp eq i32 %".137", 7
  %".142" = or i1 %".140", %".141"
  %".143" = icmp eq i32 %".137", 0
  %".144" = select  i1 %".143", ptr @"__tvm_ffi_main.text.50", ptr @"__tvm_ffi_main.text.49"
  %".145" = icmp eq i32 %".137", 1
  %".146" = select  i1 %".145", ptr @"__tvm_ffi_main.text.51", ptr %".144"
  %".147" = icmp eq i32 %".137", 2
  %".148" = select  i1 %".147", ptr @"__tvm_ffi_main.text.52", ptr %".146"
  %".149" = icmp eq i32 %".137", 3
  %".150" = select  i1 %".149", ptr @"__tvm_ffi_main.text.53", ptr %".148"
  %".151" = icmp eq i32 %".137", 4
  %".152" = select  i1 %".151", ptr @"__tvm_ffi_main.text.54", ptr %".150"
  %".153" = icmp eq i32 %".137", 5
  %".154" = select  i1 %".153", ptr @"__tvm_ffi_main.text.55", ptr %".152"
  %".155" = icmp eq i32 %".137", 6
  %".156" = select  i1 %".155", ptr @"__tvm_ffi_main.text.56", ptr %".154"
  %".157" = icmp eq i32 %".137", 7
  %".158" = select  i1 %".157", ptr @"__tvm_ffi_main.text.57", ptr %".156"
  %".159" = icmp eq i32 %".137", 8
  %".160" = select  i1 %".159", ptr @"__tvm_ffi_main.text.58", ptr %".158"
  %".161" = icmp eq i32 %".137", 9
  %".162" = select  i1 %".161", ptr @"__tvm_ffi_main.text.59", ptr %".160"
  %".163" = icmp eq i32 %".137", 11
  %".164" = select  i1 %".163", ptr @"__tvm_ffi_main.text.60", ptr %".162"
  %".165" = icmp eq i32 %".137", 12
  %".166" = select  i1 %".165", ptr @"__tvm_ffi_main.text.61", ptr %".164"
  %".167" = icmp eq i32 %".137", 65
  %".168" = select  i1 %".167", ptr @"__tvm_ffi_main.text.62", ptr %".166"
  %".169" = icmp eq i32 %".137", 66
  %".170" = select  i1 %".169", ptr @"__tvm_ffi_main.text.63", ptr %".168"
  %".171" = icmp eq i32 %".137", 68
  %".172" = select  i1 %".171", ptr @"__tvm_ffi_main.text.64", ptr %".170"
  %".173" = icmp eq i32 %".137", 69
  %".174" = select  i1 %".173", ptr @"__tvm_ffi_main.text.65", ptr %".172"
  %".175" = icmp eq i32 %".137", 70
  %".176" = select  i1 %".175", ptr @"__tvm_ffi_main.text.66", ptr %".174"
  %".177" = icmp eq i32 %".137", 71
  %".178" = select  i1 %".177", ptr @"__tvm_ffi_main.text.67", ptr %".176"
  %".179" = icmp eq i32 %".137", 72
  %".180" = select  i1 %".179", ptr @"__tvm_ffi_main.text.68", ptr %".178"
  br i1 %".142", label %"ok.5", label %"fail.5"
fail.5:
  %".182" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.69", ptr %".180")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.70", ptr %".6")
  ret i32 -1
ok.5:
  %".185" = getelementptr i8, ptr %".139", i64 24
  %".186" = select  i1 %".140", ptr %".185", ptr %".139"
  %".187" = getelementptr i8, ptr %".186", i64 8
  %".188" = load i32, ptr %".187"
  %".189" = icmp eq i32 %".188", 1
  %".190" = icmp eq i32 %".188", 1
  %".191" = select  i1 %".190", ptr @"__tvm_ffi_main.text.72", ptr @"__tvm_ffi_main.text.71"
  %".192" = icmp eq i32 %".188", 2
  %".193" = select  i1 %".192", ptr @"__tvm_ffi_main.text.73", ptr %".191"
  %".194" = icmp eq i32 %".188", 3
  %".195" = select  i1 %".194", ptr @"__tvm_ffi_main.text.74", ptr %".193"
  %".196" = icmp eq i32 %".188", 4
  %".197" = select  i1 %".196", ptr @"__tvm_ffi_main.text.75", ptr %".195"
  %".198" = icmp eq i32 %".188", 7
  %".199" = select  i1 %".198", ptr @"__tvm_ffi_main.text.76", ptr %".197"
  %".200" = icmp eq i32 %".188", 8
  %".201" = select  i1 %".200", ptr @"__tvm_ffi_main.text.77", ptr %".199"
  %".202" = icmp eq i32 %".188", 10
  %".203" = select  i1 %".202", ptr @"__tvm_ffi_main.text.78", ptr %".201"
  %".204" = icmp eq i32 %".188", 13
  %".205" = select  i1 %".204", ptr @"__tvm_ffi_main.text.79", ptr %".203"
  %".206" = icmp eq i32 %".188", 14
  %".207" = select  i1 %".206", ptr @"__tvm_ffi_main.text.80", ptr %".205"
  br i1 %".189", label %"ok.6", label %"fail.6"
fail.6:
  %".209" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.81", ptr %".207")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.82", ptr %".6")
  ret i32 -1
ok.6:
  %".212" = getelementptr i8, ptr %".186", i64 16
  %".213" = load i32, ptr %".212"
  %".214" = icmp eq i32 %".213", 1
  br i1 %".214", label %"ok.7", label %"fail.7"
fail.7:
  %".216" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.83", i32 %".213")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.84", ptr %".6")
  ret i32 -1
ok.7:
  %".219" = getelementptr i8, ptr %".186", i64 20
  %".220" = load i8, ptr %".219"
  %".221" = zext i8 %".220" to i32
  %".222" = getelementptr i8, ptr %".186", i64 21
  %".223" = load i8, ptr %".222"
  %".224" = zext i8 %".223" to i32
  %".225" = getelementptr i8, ptr %".186", i64 22
  %".226" = load i16, ptr %".225"
  %".227" = zext i16 %".226" to i32
  %".228" = icmp eq i32 %".221", 2
  %".229" = icmp eq i32 %".224", 32
  %".230" = and i1 %".228", %".229"
  %".231" = icmp eq i32 %".227", 1
  %".232" = and i1 %".230", %".231"
  %".233" = icmp eq i32 %".227", 1
  %".234" = select  i1 %".233", ptr @"__tvm_ffi_main.text.85", ptr @"__tvm_ffi_main.text.86"
  %".235" = icmp eq i32 %".221", 0
  %".236" = select  i1 %".235", ptr @"__tvm_ffi_main.text.88", ptr @"__tvm_ffi_main.text.87"
  %".237" = icmp eq i32 %".221", 1
  %".238" = select  i1 %".237", ptr @"__tvm_ffi_main.text.89", ptr %".236"
  %".239" = icmp eq i32 %".221", 2
  %".240" = select  i1 %".239", ptr @"__tvm_ffi_main.text.90", ptr %".238"
  %".241" = icmp eq i32 %".221", 3
  %".242" = select  i1 %".241", ptr @"__tvm_ffi_main.text.91", ptr %".240"
  %".243" = icmp eq i32 %".221", 4
  %".244" = select  i1 %".243", ptr @"__tvm_ffi_main.text.92", ptr %".242"
  %".245" = icmp eq i32 %".221", 5
  %".246" = select  i1 %".245", ptr @"__tvm_ffi_main.text.93", ptr %".244"
  %".247" = icmp eq i32 %".221", 6
  %".248" = select  i1 %".247", ptr @"__tvm_ffi_main.text.94", ptr %".246"
  br i1 %".232", label %"ok.8", label %"fail.8"
fail.8:
  %".250" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr %".234", ptr %".248", i32 %".224", i32 %".227")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.95", ptr %".6")
  ret i32 -1
ok.8:
  %".253" = getelementptr i8, ptr %".186", i64 24
  %".254" = load ptr, ptr %".253"
  %".255" = load i64, ptr %".254"
  %".256" = mul i64 1, %".134"
  %".257" = getelementptr i8, ptr %".65", i64 32
  %".258" = load ptr, ptr %".257"
  %".259" = ptrtoint ptr %".258" to i64
  %".260" = icmp eq i64 %".259", 0
  %".262" = getelementptr i8, ptr %".261", i64 0
  store i64 1, ptr %".262"
  %".264" = select  i1 %".260", ptr %".261", ptr %".258"
  %".265" = load i64, ptr %".264"
  %".266" = mul i64 1, %".255"
  %".267" = getelementptr i8, ptr %".186", i64 32
  %".268" = load ptr, ptr %".267"
  %".269" = ptrtoint ptr %".268" to i64
  %".270" = icmp eq i64 %".269", 0
  %".272" = getelementptr i8, ptr %".271", i64 0
  store i64 1, ptr %".272"
  %".274" = select  i1 %".270", ptr %".271", ptr %".268"
  %".275" = load i64, ptr %".274"
  br i1 %".7", label %"ok.8.if", label %"ok.8.endif"
ok.8.if:
  %".277" = getelementptr i8, ptr %"args", i32 32
  %".278" = load i32, ptr %".277"
  %".279" = icmp eq i32 %".278", 1
  %".280" = or i1 0, %".279"
  %".281" = icmp eq i32 %".278", 2
  %".282" = or i1 %".280", %".281"
  %".283" = icmp eq i32 %".278", 0
  %".284" = select  i1 %".283", ptr @"__tvm_ffi_main.text.97", ptr @"__tvm_ffi_main.text.96"
  %".285" = icmp eq i32 %".278", 1
  %".286" = select  i1 %".285", ptr @"__tvm_ffi_main.text.98", ptr %".284"
  %".287" = icmp eq i32 %".278", 2
  %".288" = select  i1 %".287", ptr @"__tvm_ffi_main.text.99", ptr %".286"
  %".289" = icmp eq i32 %".278", 3
  %".290" = select  i1 %".289", ptr @"__tvm_ffi_main.text.100", ptr %".288"
  %".291" = icmp eq i32 %".278", 4
  %".292" = select  i1 %".291", ptr @"__tvm_ffi_main.text.101", ptr %".290"
  %".293" = icmp eq i32 %".278", 5
  %".294" = select  i1 %".293", ptr @"__tvm_ffi_main.text.102", ptr %".292"
  %".295" = icmp eq i32 %".278", 6
  %".296" = select  i1 %".295", ptr @"__tvm_ffi_main.text.103", ptr %".294"
  %".297" = icmp eq i32 %".278", 7
  %".298" = select  i1 %".297", ptr @"__tvm_ffi_main.text.104", ptr %".296"
  %".299" = icmp eq i32 %".278", 8
  %".300" = select  i1 %".299", ptr @"__tvm_ffi_main.text.105", ptr %".298"
  %".301" = icmp eq i32 %".278", 9
  %".302" = select  i1 %".301", ptr @"__tvm_ffi_main.text.106", ptr %".300"
  %".303" = icmp eq i32 %".278", 11
  %".304" = select  i1 %".303", ptr @"__tvm_ffi_main.text.107", ptr %".302"
  %".305" = icmp eq i32 %".278", 12
  %".306" = select  i1 %".305", ptr @"__tvm_ffi_main.text.108", ptr %".304"
  %".307" = icmp eq i32 %".278", 65
  %".308" = select  i1 %".307", ptr @"__tvm_ffi_main.text.109", ptr %".306"
  %".309" = icmp eq i32 %".278", 66
  %".310" = select  i1 %".309", ptr @"__tvm_ffi_main.text.110", ptr %".308"
  %".311" = icmp eq i32 %".278", 68
  %".312" = select  i1 %".311", ptr @"__tvm_ffi_main.text.111", ptr %".310"
  %".313" = icmp eq i32 %".278", 69
  %".314" = select  i1 %".313", ptr @"__tvm_ffi_main.text.112", ptr %".312"
  %".315" = icmp eq i32 %".278", 70
  %".316" = select  i1 %".315", ptr @"__tvm_ffi_main.text.113", ptr %".314"
  %".317" = icmp eq i32 %".278", 71
  %".318" = select  i1 %".317", ptr @"__tvm_ffi_main.text.114", ptr %".316"
  %".319" = icmp eq i32 %".278", 72
  %".320" = select  i1 %".319", ptr @"__tvm_ffi_main.text.115", ptr %".318"
  br i1 %".282", label %"ok.9", label %"fail.9"
ok.8.endif:
  %".328" = phi  i64 [%".134", %"ok.8"], [%".326", %"ok.9"]
  %".329" = icmp eq i64 %".134", %".328"
  %".330" = select  i1 %".7", ptr @"__tvm_ffi_main.text.119", ptr @"__tvm_ffi_main.text.118"
  br i1 %".329", label %"ok.10", label %"fail.10"
fail.9:
  %".322" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.116", ptr %".320")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.117", ptr %".6")
  ret i32 -1
ok.9:
  %".325" = getelementptr i8, ptr %".277", i64 8
  %".326" = load i64, ptr %".325"
  br label %"ok.8.endif"
fail.10:
  %".332" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.120", i64 %".134", i64 %".328", ptr %".330")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.121", ptr %".6")
  ret i32 -1
ok.10:
  %".335" = mul i64 1, %".134"
  %".336" = icmp eq i64 %".265", 1
  %".337" = icmp eq i64 %".134", 1
  %".338" = or i1 %".336", %".337"
  br i1 %".338", label %"ok.11", label %"fail.11"
fail.11:
  %".340" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.122", i64 %".265", i64 1)
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.123", ptr %".6")
  ret i32 -1
ok.11:
  %".343" = load ptr, ptr %".65"
  %".344" = getelementptr i8, ptr %".65", i64 40
  %".345" = load i64, ptr %".344"
  %".346" = getelementptr i8, ptr %".343", i64 %".345"
  %".347" = ptrtoint ptr %".346" to i64
  %".348" = and i64 %".347", 63
  %".349" = icmp eq i64 %".348", 0
  br i1 %".349", label %"ok.12", label %"fail.12"
fail.12:
  %".351" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.124", ptr %".346")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.125", ptr %".6")
  ret i32 -1
ok.12:
  %".354" = icmp eq i64 %".255", %".328"
  %".355" = select  i1 %".7", ptr @"__tvm_ffi_main.text.127", ptr @"__tvm_ffi_main.text.126"
  br i1 %".354", label %"ok.13", label %"fail.13"
fail.13:
  %".357" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.128", i64 %".255", i64 %".328", ptr %".355")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.129", ptr %".6")
  ret i32 -1
ok.13:
  %".360" = mul i64 1, %".255"
  %".361" = icmp eq i64 %".275", 1
  %".362" = icmp eq i64 %".255", 1
  %".363" = or i1 %".361", %".362"
  br i1 %".363", label %"ok.14", label %"fail.14"
fail.14:
  %".365" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.130", i64 %".275", i64 1)
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.131", ptr %".6")
  ret i32 -1
ok.14:
  %".368" = load ptr, ptr %".186"
  %".369" = getelementptr i8, ptr %".186", i64 40
  %".370" = load i64, ptr %".369"
  %".371" = getelementptr i8, ptr %".368", i64 %".370"
  %".372" = ptrtoint ptr %".371" to i64
  %".373" = and i64 %".372", 63
  %".374" = icmp eq i64 %".373", 0
  br i1 %".374", label %"ok.15", label %"fail.15"
fail.15:
  %".376" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.132", ptr %".371")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.133", ptr %".6")
  ret i32 -1
ok.15:
  %".379" = call i32 @"main"(ptr %".346", ptr %".371", i64 %".328")
  %".380" = icmp ne i32 %".379", -1
  br i1 %".380", label %"ok.16", label %"fail.16"
fail.16:
  %".382" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.134")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.135", ptr %".6")
  ret i32 -1
ok.16:
  %".385" = icmp eq i32 %".379", 0
  br i1 %".385", label %"ok.17", label %"fail.17"
fail.17:
  %".387" = call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %".6", i64 1024, ptr @"__tvm_ffi_main.text.136", i32 %".379")
  call void @"TVMFFIErrorSetRaisedFromCStr"(ptr @"__tvm_ffi_main.text.137", ptr %".6")
  ret i32 -1
ok.17:
  ret i32 0
}
