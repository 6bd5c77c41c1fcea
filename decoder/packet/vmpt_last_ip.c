/* SPDX-License-Identifier: MIT */
/* The last-IP register: TIP/FUP payloads are compressed against it. */
#include "vmpt/packet.h"
#include "vmpt/error.h"

void vmpt_last_ip_init(struct vmpt_last_ip *lip)
{
	lip->ip = 0;
	lip->have_ip = 0;
	lip->suppressed = 0;
}

static uint64_t sext48(uint64_t v)
{
	return (uint64_t)((int64_t)(v << 16) >> 16);
}

int vmpt_last_ip_update(struct vmpt_last_ip *lip, const struct vmpt_packet *pkt)
{
	uint64_t p = pkt->ip.ip;

	switch (pkt->ip.ipc) {
	case VMPT_IPC_SUPPRESSED:
		lip->suppressed = 1;
		return 0;
	case VMPT_IPC_UPDATE_16:
		lip->ip = (lip->ip & ~0xffffull) | (p & 0xffffull);
		break;
	case VMPT_IPC_UPDATE_32:
		lip->ip = (lip->ip & ~0xffffffffull) | (p & 0xffffffffull);
		break;
	case VMPT_IPC_SEXT_48:
		lip->ip = sext48(p);
		break;
	case VMPT_IPC_UPDATE_48:
		lip->ip = (lip->ip & ~0xffffffffffffull) | (p & 0xffffffffffffull);
		break;
	case VMPT_IPC_FULL:
		lip->ip = p;
		break;
	default:
		return -VMPT_ERR_BAD_PACKET;
	}
	lip->have_ip = 1;
	lip->suppressed = 0;
	return 0;
}

int vmpt_last_ip_query(const struct vmpt_last_ip *lip, uint64_t *ip)
{
	if (lip->suppressed)
		return -VMPT_ERR_IP_SUPPRESSED;
	if (!lip->have_ip)
		return -VMPT_ERR_NO_LAST_IP;
	*ip = lip->ip;
	return 0;
}

enum vmpt_ipc vmpt_last_ip_compress(const struct vmpt_last_ip *lip, uint64_t ip,
				    uint64_t *payload)
{
	if (lip->have_ip && (lip->ip >> 16) == (ip >> 16)) {
		*payload = ip & 0xffff;
		return VMPT_IPC_UPDATE_16;
	}
	if (lip->have_ip && (lip->ip >> 32) == (ip >> 32)) {
		*payload = ip & 0xffffffff;
		return VMPT_IPC_UPDATE_32;
	}
	if (sext48(ip) == ip) {
		*payload = ip & 0xffffffffffffull;
		return VMPT_IPC_SEXT_48;
	}
	*payload = ip;
	return VMPT_IPC_FULL;
}
