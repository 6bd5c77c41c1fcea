/* SPDX-License-Identifier: MIT */
/* printf's number and string columns (%5d, %-5d, %03d, %10lu, %16s, %*s,
 * %lx) written without printf.  The start of every default line (comm, tid,
 * time, period, event) was five or six vsnprintf calls, about 1,000
 * instructions each: most of the cost of a line.  The same bytes as
 * printf gives.
 */
#include "vmpt_script_int.h"

#include <string.h>

/* Two decimal digits per value below 100. */
static const char dec_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

unsigned script_dec_digits(char *end, uint64_t v)
{
	char *p = end;

	while (v >= 100) {
		p -= 2;
		memcpy(p, &dec_pairs[2 * (v % 100)], 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, &dec_pairs[2 * v], 2);
	} else {
		*--p = (char)('0' + v);
	}
	return (unsigned)(end - p);
}

const char script_hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

void script_out_hex(struct vmpt_consumer *c, uint64_t v)
{
	char tmp[18];
	unsigned n = v ? (unsigned)(67 - __builtin_clzll(v)) / 4 : 1;

	/* in pairs: an odd count writes a 0 before */
	for (unsigned k = 0; k < n; k += 2, v >>= 8)
		memcpy(tmp + sizeof(tmp) - k - 2, &script_hex_pairs[2 * (v & 0xff)], 2);
	script_out_mem(c, tmp + sizeof(tmp) - n, n);
}

static const char spaces[32] = "                                ";

void script_out_fill(struct vmpt_consumer *c, char ch, size_t n)
{
	while (n) {
		size_t k = script_out_room(c, n);

		memset(c->buf + c->len, ch, k);
		c->len += k;
		n -= k;
	}
}

/* len characters of s in a column width wide: right-aligned, or left
 * with SCRIPT_LEFT; never cut, as printf's %*s.
 */
void script_out_padded(struct vmpt_consumer *c, const char *s, size_t len, int width,
		       unsigned how)
{
	size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
	char *p;

	if (len + pad > 256) {
		if (!(how & SCRIPT_LEFT))
			script_out_fill(c, ' ', pad);
		script_out_mem(c, s, len);
		if (how & SCRIPT_LEFT)
			script_out_fill(c, ' ', pad);
		return;
	}
	/* the common column: room made once, written in place */
	if (c->len > SCRIPT_OUT_CAP - 256)
		script_out_flush(c);
	p = c->buf + c->len;
	/* a column's spaces are mostly fewer than 32: two stores */
	if (how & SCRIPT_LEFT) {
		memcpy(p, s, len);
		if (pad <= 32)
			memcpy(p + len, spaces, 32);
		else
			memset(p + len, ' ', pad);
	} else {
		if (pad <= 32)
			memcpy(p, spaces, 32);
		else
			memset(p, ' ', pad);
		memcpy(p + pad, s, len);
	}
	c->len += len + pad;
}

/* A magnitude with its sign, as printf's d and u conversions. */
static void out_number(struct vmpt_consumer *c, uint64_t mag, int neg, int width, unsigned how)
{
	char tmp[24];
	unsigned n = script_dec_digits(tmp + sizeof(tmp), mag);
	const char *digits = tmp + sizeof(tmp) - n;
	size_t len = n + (neg != 0);
	size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;

	if (!neg && !(how & SCRIPT_ZERO)) {
		script_out_padded(c, digits, n, width, how);
		return;
	}
	if (!(how & (SCRIPT_LEFT | SCRIPT_ZERO)))
		script_out_fill(c, ' ', pad);
	if (neg)
		script_out_char(c, '-');
	if ((how & SCRIPT_ZERO) && !(how & SCRIPT_LEFT))
		script_out_fill(c, '0', pad);
	script_out_mem(c, digits, n);
	if (how & SCRIPT_LEFT)
		script_out_fill(c, ' ', pad);
}
void script_out_u64(struct vmpt_consumer *c, uint64_t v, int width, unsigned how)
{
	out_number(c, v, 0, width, how);
}

void script_out_int(struct vmpt_consumer *c, int64_t v, int width, unsigned how)
{
	out_number(c, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0, width, how);
}
