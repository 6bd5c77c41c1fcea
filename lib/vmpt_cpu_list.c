/* SPDX-License-Identifier: MIT */
#include "vmpt/record.h"
#include "vmpt/error.h"

#include <stdlib.h>
#include <string.h>

int vmpt_parse_cpu_list(const char *list, uint8_t *set, int max)
{
	memset(set, 0, (size_t)max);
	int count = 0;
	const char *p = list;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			return -VMPT_ERR_INVAL;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return -VMPT_ERR_INVAL;
			p = end;
		}
		if (a < 0 || b < a || b >= max)
			return -VMPT_ERR_INVAL;
		for (long c = a; c <= b; c++)
			if (!set[c]) {
				set[c] = 1;
				count++;
			}
		if (*p == ',')
			p++;
		else if (*p)
			return -VMPT_ERR_INVAL;
	}
	return count ? count : -VMPT_ERR_INVAL;
}
