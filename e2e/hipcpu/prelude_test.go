package hipcpu

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/kgen-dev/kgen/templates"
)

// preludeSweep is the C++ that measures each of kgen's own HIP math
// formulations against the host's double-precision libm: every 997th float
// bit pattern (both signs, all exponents: about 4.3 million inputs), and
// for pow the pairs a kernel meets (rope's theta^(-2i/d)) and a grid of
// bases and exponents. Errors are in units of the float result's last
// place (subnormals: of the smallest normal's), with NaN required where
// the reference is NaN and nowhere else.
const preludeSweep = `
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#define __device__
#define __forceinline__ inline
BLOCKS
static double ulps(float got, double want) {
    if (std::isinf((float)want)) want = (float)want; // beyond FLT_MAX the correctly rounded result is inf
    if (std::isnan(want) || std::isnan(got)) return std::isnan(want) == std::isnan(got) ? 0 : 1e9;
    if (std::isinf(want) || std::isinf(got)) return (double)got == want ? 0 : 1e9;
    int e;
    std::frexp(want, &e);
    double ulp = std::ldexp(1.0, (e < -125 ? -125 : e) - 24);
    return std::fabs((double)got - want) / ulp;
}
template <typename F, typename R> static void sweep1(const char* name, F f, R ref) {
    double worst = 0;
    float at = 0;
    for (unsigned long long b = 0; b <= 0xffffffffull; b += 997) {
        unsigned int u = (unsigned int)b;
        float x;
        std::memcpy(&x, &u, 4);
        double e = ulps(f(x), ref((double)x));
        if (e > worst) worst = e, at = x;
    }
    std::printf("%s %.3f %.9g\n", name, worst, at);
}
int main() {
    sweep1("tanh", kgen_tanhf, [](double x) { return std::tanh(x); });
    sweep1("erf", kgen_erff, [](double x) { return std::erf(x); });
    sweep1("expm1", kgen_expm1f, [](double x) { return std::expm1(x); });
    sweep1("log1p", kgen_log1pf, [](double x) { return std::log1p(x); });
    sweep1("sigmoid", kgen_sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); });
    sweep1("sin", [](float x) { return std::fabs(x) < 105615.0f ? kgen_sinf(x) : NAN; }, [](double x) { return std::fabs(x) < 105615.0 ? std::sin(x) : NAN; });
    sweep1("cos", [](float x) { return std::fabs(x) < 105615.0f ? kgen_cosf(x) : NAN; }, [](double x) { return std::fabs(x) < 105615.0 ? std::cos(x) : NAN; });
    double worst = 0;
    float ax = 0, ay = 0;
    for (int i = 0; i <= 4096; ++i) {
        for (float base : {10000.0f, 500000.0f, 2.0f, 0.5f, 1.0001f, 3.7f, 1e-20f, 1e20f, -2.5f, -1.0f, 0.0f}) {
            float y = -2.0f * (float)i / 4096.0f;
            float ys[] = {y, -y, y * 40.0f, (float)(i - 2048), (float)(i - 2048) / 7.0f};
            for (float yy : ys) {
                double e = ulps(kgen_powf(base, yy), std::pow((double)base, (double)yy));
                if (e > worst) worst = e, ax = base, ay = yy;
            }
        }
    }
    std::printf("pow %.3f %.9g %.9g\n", worst, ax, ay);
    return 0;
}
`

// TestHIPPreludeAccuracy: kgen's own HIP formulations (templates/hip/
// prelude.tmpl: where the AMDGPU backend has no accurate lowering) are
// within the funcs table's library bound, 4 units in the last place of
// the float result, over the sweep; on the CPU the builtins they are
// built from are the host's correctly rounded (or nearly) libm, as the
// AMDGPU lowerings of exp, log, exp2, log2 and sqrt are within 1 ulp.
// The arguments of sin and cos are swept below 105615, where their own
// reduction serves.
func TestHIPPreludeAccuracy(t *testing.T) {
	cc := cxx(t)
	data, err := templates.FS.ReadFile("hip/prelude.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template.Must(template.New("p").Parse(string(data)))
	var blocks bytes.Buffer
	for _, b := range []string{"tanhf", "erff", "expm1f", "log1pf", "sinf", "cosf", "powf"} {
		if err := tmpl.ExecuteTemplate(&blocks, "prelude_kgen_"+b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := tmpl.ExecuteTemplate(&blocks, "prelude_kgen_sigmoid", nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "sweep.cpp")
	if err := os.WriteFile(src, []byte(strings.Replace(preludeSweep, "BLOCKS", blocks.String(), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sweep")
	if out, err := exec.Command(cc, "-std=c++20", "-O2", "-ffp-contract=off", src, "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		f := strings.Fields(sc.Text())
		worst, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		seen++
		if worst > 4 {
			t.Errorf("%s: %.3f ulp at %s; the bound is 4", f[0], worst, strings.Join(f[2:], ", "))
			continue
		}
		t.Logf("%s: max %.3f ulp (at %s)", f[0], worst, strings.Join(f[2:], ", "))
	}
	if seen != 8 {
		t.Errorf("%d functions measured; want 8:\n%s", seen, out)
	}
}
