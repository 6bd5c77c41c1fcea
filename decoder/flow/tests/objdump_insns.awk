# objdump -d --insn-width=16 output -> one line per instruction:
#   ADDR LEN CLASS TARGET
# hex ADDR; LEN in bytes; CLASS as insn_sweep names enum vmpt_iclass
# (other jcc jmp jmpi call calli ret fcall fret fjmp int syscall iret
# sysret vmentry), bad for objdump's "(bad)", cut for bytes objdump prints
# alone (.byte, a lone prefix); TARGET the hex target
# of a direct branch, else -.
BEGIN {
	FS = "\t"
	prefix = "^(rex(\\.[WRXB]+)?|rex64|bnd|notrack|rep|repz|repe|repnz|repne|lock|data16|data32|addr16|addr32|cs|ds|es|fs|gs|ss|xacquire|xrelease|\\{[a-z0-9]+\\})$"
}
/^ *[0-9a-f]+:\t/ {
	addr = $1
	sub(/^ */, "", addr)
	sub(/:$/, "", addr)
	len = split($2, bytes, " ")
	text = $3
	if (text == "")
		next
	n = split(text, w, " +")
	k = 1
	# prefixes objdump names before the mnemonic
	while (k < n && w[k] ~ prefix)
		k++
	m = w[k]
	sub(/,p[tn]$/, "", m)
	# objdump cuts an instruction that runs into the next symbol (the
	# kernel's overlapping return thunks): its prefixes, then .byte; and
	# prints a REX that a legacy prefix follows on a line of its own
	cut = m ~ /^\.byte$/ || (k == n && m ~ prefix)
	op = w[k + 1]
	cls = "other"
	tgt = "-"
	if (cut)
		cls = "cut"
	else if (m == "(bad)")
		cls = "bad"
	else if (m ~ /^(jmp|jmpq|jmpw|jmpl)$/)
		cls = op ~ /^\*/ ? "jmpi" : "jmp"
	else if (m ~ /^ljmp/)
		cls = "fjmp"
	else if (m ~ /^j/ && m != "jmpe")
		cls = "jcc"
	else if (m ~ /^loop/)
		cls = "jcc"
	else if (m ~ /^(call|callq|callw|calll)$/)
		cls = op ~ /^\*/ ? "calli" : "call"
	else if (m ~ /^lcall/ || m == "vmcall" || m == "vmmcall")
		cls = "fcall"
	else if (m ~ /^(ret|retq|retw|retl)$/)
		cls = "ret"
	else if (m ~ /^lret/)
		cls = "fret"
	else if (m ~ /^u?iret/)
		cls = "iret"
	else if (m ~ /^(int|int3|into|int1|icebp)$/)
		cls = "int"
	else if (m == "syscall" || m == "sysenter")
		cls = "syscall"
	else if (m ~ /^sys(ret|exit)/)
		cls = "sysret"
	else if (m == "vmlaunch" || m == "vmresume")
		cls = "vmentry"
	if (cls == "jmp" || cls == "jcc" || cls == "call")
		tgt = op
	print addr, len, cls, tgt
}
