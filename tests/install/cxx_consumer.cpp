// A C++ program using libvmpt's public headers, built in make check: the
// headers must compile as C++ (extern "C", no C-only constructs) and a
// decoding program must link libvmpt alone, without libvirt or libssh.
#include "vmpt/dump.h"
#include "vmpt/error.h"
#include "vmpt/file.h"
#include "vmpt/flow.h"
#include "vmpt/guest_tasks.h"
#include "vmpt/guest_time.h"
#include "vmpt/image.h"
#include "vmpt/packet.h"
#include "vmpt/perf_data.h"
#include "vmpt/report.h"
#include "vmpt/tracing_data.h"
#include "vmpt/unwind.h"
#include "vmpt/script_output.h"
#include "vmpt/session.h"

#include <cstdio>
#include <cstring>
#include <vector>

int main()
{
	// A PSB, PSBEND: the packet layer finds and names them.
	std::vector<uint8_t> trace;
	for (int i = 0; i < 8; i++) {
		trace.push_back(0x02);
		trace.push_back(0x82);
	}
	trace.push_back(0x02);
	trace.push_back(0x23);
	struct vmpt_packet pkt;
	int ret = vmpt_pkt_decode(trace.data(), trace.data() + trace.size(), 0, &pkt);
	if (ret < 0 || pkt.type != VMPT_PKT_PSB) {
		std::fprintf(stderr, "no PSB: %s\n", vmpt_strerror(ret));
		return 1;
	}
	struct vmpt_tsc_scale s = { 0x1000, 0, 48 };
	if (vmpt_host_tsc(&s, vmpt_guest_tsc(&s, 12345)) != 12345)
		return 1;
	struct vmpt_image *img = vmpt_image_new();
	if (!img)
		return 1;
	vmpt_image_free(img);
	std::printf("%s\n", vmpt_strerror(-VMPT_ERR_NOSYNC));
	return 0;
}
