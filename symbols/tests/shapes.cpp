// A C++ program for the symbol tests: templates, namespaces, virtual
// calls, the standard library's containers, and functions named as rustc
// names them (legacy and v0 manglings).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace geo {
struct Shape {
	virtual ~Shape() {}
	virtual double area() const = 0;
};
struct Square : Shape {
	double s;
	explicit Square(double x) : s(x) {}
	double area() const override { return s * s; }
};
template <typename T> T twice(T v) { return v + v; }
}

extern "C" int rust_legacy(int) __asm__(
	"_ZN66_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h27ab2f07fd1e5b9fE");
extern "C" int rust_legacy(int x) { return x * 3 + 1; }
extern "C" int rust_v0(int) __asm__("_RNvMs_Cs4Cv8Wi1oAIB_7mycrateNtB4_5Point3new");
extern "C" int rust_v0(int x) { return x ^ 5; }

// An indirect call: the area of a shape the caller does not know.
__attribute__((noinline)) static double area_of(const geo::Shape &s)
{
	return s.area();
}

static int count_spaces(const std::string &s)
{
	int n = 0;

	for (char c : s)
		n += c == ' ';
	return n;
}

int main(int argc, char **argv)
{
	std::vector<int> v;
	std::map<std::string, int> m;

	for (int i = 0; i < 50 + argc; i++) {
		v.push_back(i);
		m[std::to_string(i)] = geo::twice(i);
	}
	geo::Square q(argc);
	printf("%d %zu %f %ld %d\n", count_spaces(argv[0]), m.size(), area_of(q),
	       (long)v.size(), rust_legacy(argc) + rust_v0(argc));
	return 0;
}
