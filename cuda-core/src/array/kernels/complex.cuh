// The crate's complex types: two parts, real first (num-complex's and NumPy's layout), with
// the arithmetic, NumPy's lexicographic order, and the math functions expressions call, each
// written once for both widths (`_cc_cx_*` templates over the part type). Operators and
// functions are friends of the types, found only for complex arguments (argument-dependent
// lookup), so they never compete with the built-in ones for other types.
struct cuda_core_c64;
struct cuda_core_c128;
// Which types convert to complex implicitly: the real ones, not the other complex width (a
// cast says that), so that mixed operands never match two operators.
template <typename R> struct _cc_real_type { static const bool value = true; };
template <> struct _cc_real_type<cuda_core_c64> { static const bool value = false; };
template <> struct _cc_real_type<cuda_core_c128> { static const bool value = false; };
template <bool B> struct _cc_if_real {};
template <> struct _cc_if_real<true> { typedef int type; };
#define _CC_IF_REAL(R) typename _cc_if_real<_cc_real_type<R>::value>::type = 0
template <typename F> struct _cc_cx_of;
template <> struct _cc_cx_of<float> { typedef cuda_core_c64 type; };
template <> struct _cc_cx_of<double> { typedef cuda_core_c128 type; };
#define _CC_CX typename _cc_cx_of<F>::type

template <typename F> __device__ __forceinline__ _CC_CX _cc_cx(F re, F im) { return _CC_CX(re, im); }
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_add(F ar, F ai, F br, F bi) { return _cc_cx(ar + br, ai + bi); }
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_mul(F ar, F ai, F br, F bi) {
    return _cc_cx(ar * br - ai * bi, ar * bi + ai * br);
}
// Smith's division: scaled by the divisor's larger part, so that no square overflows.
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_div(F ar, F ai, F br, F bi) {
    if (fabs(br) >= fabs(bi)) {
        if (br == (F)0 && bi == (F)0) return _cc_cx(ar / fabs(br), ai / fabs(bi));
        F r = bi / br, d = br + bi * r;
        return _cc_cx((ar + ai * r) / d, (ai - ar * r) / d);
    }
    F r = br / bi, d = bi + br * r;
    return _cc_cx((ar * r + ai) / d, (ai * r - ar) / d);
}
// NumPy's order: by the real parts, then the imaginary ones; a NaN part compares false.
template <typename F> __device__ __forceinline__ bool _cc_cx_lt(F ar, F ai, F br, F bi) {
    return (ar < br && ai == ai && bi == bi) || (ar == br && ai < bi);
}
template <typename F> __device__ __forceinline__ bool _cc_cx_le(F ar, F ai, F br, F bi) {
    return (ar < br && ai == ai && bi == bi) || (ar == br && ai <= bi);
}


template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_exp(F x, F y) {
    if (y == (F)0) return _cc_cx(exp(x), y);
    F m = exp(x);
    return _cc_cx(m * cos(y), m * sin(y));
}
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_log(F x, F y) { return _cc_cx(log(hypot(x, y)), atan2(y, x)); }
// The principal root, without cancellation: from the larger of |x| and |z|.
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_sqrt(F x, F y) {
    if (x == (F)0 && y == (F)0) return _cc_cx((F)0, y);
    if (isinf(y)) return _cc_cx((F)(1.0 / 0.0), y);
    F t = sqrt((fabs(x) + hypot(x, y)) * (F)0.5);
    if (x >= (F)0) return _cc_cx(t, y / (t + t));
    return _cc_cx(fabs(y) / (t + t), copysign(t, y));
}
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_sinh(F x, F y) { return _cc_cx(sinh(x) * cos(y), cosh(x) * sin(y)); }
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_cosh(F x, F y) { return _cc_cx(cosh(x) * cos(y), sinh(x) * sin(y)); }
// tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); beyond |x| = 20 the real part is
// +-1 to the type's precision, and the formula would overflow.
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_tanh(F x, F y) {
    if (fabs(x) > (F)20) return _cc_cx(copysign((F)1, x), (F)4 * sin(y) * cos(y) * exp((F)-2 * fabs(x)));
    F d = cosh(x + x) + cos(y + y);
    return _cc_cx(sinh(x + x) / d, sin(y + y) / d);
}
// asinh z = log(z + sqrt(z^2 + 1)), taken for Re z >= 0 (asinh is odd), where nothing cancels.
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_asinh(F x, F y) {
    if (signbit(x)) {
        _CC_CX r = _cc_cx_asinh(-x, -y);
        return _cc_cx(-r.re, -r.im);
    }
    _CC_CX s = _cc_cx_sqrt(x * x - y * y + (F)1, (F)2 * x * y);
    return _cc_cx_log(x + s.re, y + s.im);
}
// acosh z = log(z + sqrt(z + 1) sqrt(z - 1)).
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_acosh(F x, F y) {
    _CC_CX p = _cc_cx_sqrt(x + (F)1, y), m = _cc_cx_sqrt(x - (F)1, y);
    _CC_CX pm = _cc_cx_mul(p.re, p.im, m.re, m.im);
    return _cc_cx_log(x + pm.re, y + pm.im);
}
// atanh z = (log1p(z) - log1p(-z)) / 2: the real part as one log1p of the ratio of |1 + z|^2
// to |1 - z|^2, the imaginary part as an angle.
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_atanh(F x, F y) {
    F re = (F)0.25 * log1p((F)4 * x / (((F)1 - x) * ((F)1 - x) + y * y));
    F im = (F)0.5 * atan2(y + y, ((F)1 - x) * ((F)1 + x) - y * y);
    return _cc_cx(re, im);
}
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_expm1(F x, F y) {
    F s = sin(y * (F)0.5);
    return _cc_cx(expm1(x) * cos(y) - (F)2 * s * s, exp(x) * sin(y));
}
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_log1p(F x, F y) {
    return _cc_cx((F)0.5 * log1p(x * (x + (F)2) + y * y), atan2(y, x + (F)1));
}
// NumPy's power: z^0 = 1, 0^w = 0 for Re w > 0 and Im w = 0, small integer powers by
// multiplication, else exp(w log z).
template <typename F> __device__ __forceinline__ _CC_CX _cc_cx_pow(F ar, F ai, F br, F bi) {
    if (br == (F)0 && bi == (F)0) return _cc_cx((F)1, (F)0);
    if (ar == (F)0 && ai == (F)0) {
        if (br > (F)0 && bi == (F)0) return _cc_cx((F)0, (F)0);
        return _cc_cx((F)(0.0 / 0.0), (F)(0.0 / 0.0));
    }
    if (bi == (F)0 && br == rint(br) && fabs(br) < (F)100) {
        int n = (int)br;
        _CC_CX r = _cc_cx((F)1, (F)0), p = _cc_cx(ar, ai);
        for (int k = n < 0 ? -n : n; k; k >>= 1) {
            if (k & 1) r = _cc_cx_mul(r.re, r.im, p.re, p.im);
            p = _cc_cx_mul(p.re, p.im, p.re, p.im);
        }
        return n < 0 ? _cc_cx_div((F)1, (F)0, r.re, r.im) : r;
    }
    _CC_CX l = _cc_cx_log(ar, ai);
    _CC_CX e = _cc_cx_mul(l.re, l.im, br, bi);
    return _cc_cx_exp(e.re, e.im);
}

#define _CC_CX_OPERATORS(Z)                                                                            \
    friend __device__ __forceinline__ Z operator+(Z a, Z b) { return _cc_cx_add(a.re, a.im, b.re, b.im); }   \
    friend __device__ __forceinline__ Z operator-(Z a, Z b) { return _cc_cx_add(a.re, a.im, -b.re, -b.im); } \
    friend __device__ __forceinline__ Z operator*(Z a, Z b) { return _cc_cx_mul(a.re, a.im, b.re, b.im); }   \
    friend __device__ __forceinline__ Z operator/(Z a, Z b) { return _cc_cx_div(a.re, a.im, b.re, b.im); }   \
    friend __device__ __forceinline__ Z operator-(Z a) { return Z(-a.re, -a.im); }                           \
    friend __device__ __forceinline__ Z &operator+=(Z &a, Z b) { return a = a + b; }                         \
    friend __device__ __forceinline__ Z &operator*=(Z &a, Z b) { return a = a * b; }                         \
    friend __device__ __forceinline__ bool operator==(Z a, Z b) { return a.re == b.re && a.im == b.im; }     \
    friend __device__ __forceinline__ bool operator!=(Z a, Z b) { return !(a == b); }                        \
    friend __device__ __forceinline__ bool operator!(Z a) { return a.re == 0 && a.im == 0; }                 \
    friend __device__ __forceinline__ bool operator<(Z a, Z b) { return _cc_cx_lt(a.re, a.im, b.re, b.im); } \
    friend __device__ __forceinline__ bool operator<=(Z a, Z b) { return _cc_cx_le(a.re, a.im, b.re, b.im); }\
    friend __device__ __forceinline__ bool operator>(Z a, Z b) { return b < a; }                             \
    friend __device__ __forceinline__ bool operator>=(Z a, Z b) { return b <= a; }
#define _CC_CX_FUNCTIONS(Z, F)                                                                              \
    friend __device__ __forceinline__ F _cc_abs(Z z) { return hypot(z.re, z.im); }                                 \
    friend __device__ __forceinline__ F _cc_angle(Z z) { return atan2(z.im, z.re); }                               \
    friend __device__ __forceinline__ F _cc_real(Z z) { return z.re; }                                             \
    friend __device__ __forceinline__ F _cc_imag(Z z) { return z.im; }                                             \
    friend __device__ __forceinline__ Z _cc_conj(Z z) { return Z(z.re, -z.im); }                                   \
    friend __device__ __forceinline__ Z exp(Z z) { return _cc_cx_exp(z.re, z.im); }                                \
    friend __device__ __forceinline__ Z exp2(Z z) { return _cc_cx_exp(z.re * (F)0.6931471805599453, z.im * (F)0.6931471805599453); }        \
    friend __device__ __forceinline__ Z expm1(Z z) { return _cc_cx_expm1(z.re, z.im); }                            \
    friend __device__ __forceinline__ Z log(Z z) { return _cc_cx_log(z.re, z.im); }                                \
    friend __device__ __forceinline__ Z log2(Z z) { Z l = log(z); return Z(l.re / (F)0.6931471805599453, l.im / (F)0.6931471805599453); }    \
    friend __device__ __forceinline__ Z log10(Z z) { Z l = log(z); return Z(l.re / (F)2.302585092994046, l.im / (F)2.302585092994046); } \
    friend __device__ __forceinline__ Z log1p(Z z) { return _cc_cx_log1p(z.re, z.im); }                            \
    friend __device__ __forceinline__ Z sqrt(Z z) { return _cc_cx_sqrt(z.re, z.im); }                              \
    friend __device__ __forceinline__ Z sinh(Z z) { return _cc_cx_sinh(z.re, z.im); }                              \
    friend __device__ __forceinline__ Z cosh(Z z) { return _cc_cx_cosh(z.re, z.im); }                              \
    friend __device__ __forceinline__ Z tanh(Z z) { return _cc_cx_tanh(z.re, z.im); }                              \
    friend __device__ __forceinline__ Z asinh(Z z) { return _cc_cx_asinh(z.re, z.im); }                            \
    friend __device__ __forceinline__ Z acosh(Z z) { return _cc_cx_acosh(z.re, z.im); }                            \
    friend __device__ __forceinline__ Z atanh(Z z) { return _cc_cx_atanh(z.re, z.im); }                            \
    /* sin z = -i sinh(iz), and so on: the circular functions from the hyperbolic ones. */                  \
    friend __device__ __forceinline__ Z sin(Z z) { Z r = _cc_cx_sinh(-z.im, z.re); return Z(r.im, -r.re); }        \
    friend __device__ __forceinline__ Z cos(Z z) { return _cc_cx_cosh(-z.im, z.re); }                              \
    friend __device__ __forceinline__ Z tan(Z z) { Z r = _cc_cx_tanh(-z.im, z.re); return Z(r.im, -r.re); }        \
    friend __device__ __forceinline__ Z asin(Z z) { Z r = _cc_cx_asinh(-z.im, z.re); return Z(r.im, -r.re); }      \
    friend __device__ __forceinline__ Z atan(Z z) { Z r = _cc_cx_atanh(-z.im, z.re); return Z(r.im, -r.re); }      \
    friend __device__ __forceinline__ Z acos(Z z) { Z r = asin(z); return Z((F)1.5707963267948966 - r.re, -r.im); }            \
    friend __device__ __forceinline__ Z rint(Z z) { return Z(rint(z.re), rint(z.im)); }                            \
    friend __device__ __forceinline__ Z _cc_sign(Z z) {                                                            \
        if (z.re != z.re || z.im != z.im) return Z((F)(0.0 / 0.0), (F)(0.0 / 0.0));                                         \
        F m = hypot(z.re, z.im);                                                                            \
        return m == (F)0 ? Z((F)0, (F)0) : Z(z.re / m, z.im / m);                                           \
    }                                                                                                       \
    friend __device__ __forceinline__ Z _cc_reciprocal(Z z) { return _cc_cx_div((F)1, (F)0, z.re, z.im); }        \
    friend __device__ __forceinline__ Z _cc_pow(Z a, Z b) { return _cc_cx_pow(a.re, a.im, b.re, b.im); }           \
    friend __device__ __forceinline__ bool _cc_isinf(Z z) { return isinf(z.re) || isinf(z.im); }                   \
    friend __device__ __forceinline__ bool _cc_isfinite(Z z) { return isfinite(z.re) && isfinite(z.im); }

struct cuda_core_c64 {
    float re, im;
    cuda_core_c64() = default;
    __device__ cuda_core_c64(float r, float i) : re(r), im(i) {}
    // From any real type (the 16-bit floats through their `float` conversion).
    template <typename R, _CC_IF_REAL(R)> __device__ cuda_core_c64(R r) : re((float)r), im(0.0f) {}
    __device__ explicit cuda_core_c64(const cuda_core_c128 &z);
    // To a real type: the real part, as NumPy's cast of complex to real keeps it.
    template <typename R> __device__ explicit operator R() const { return (R)re; }
    _CC_CX_OPERATORS(cuda_core_c64)
    _CC_CX_FUNCTIONS(cuda_core_c64, float)
};
struct cuda_core_c128 {
    double re, im;
    cuda_core_c128() = default;
    __device__ cuda_core_c128(double r, double i) : re(r), im(i) {}
    template <typename R, _CC_IF_REAL(R)> __device__ cuda_core_c128(R r) : re((double)r), im(0.0) {}
    __device__ explicit cuda_core_c128(const cuda_core_c64 &z) : re(z.re), im(z.im) {}
    template <typename R> __device__ explicit operator R() const { return (R)re; }
    _CC_CX_OPERATORS(cuda_core_c128)
    _CC_CX_FUNCTIONS(cuda_core_c128, double)
};
#undef _CC_IF_REAL
#undef _CC_CX_OPERATORS
#undef _CC_CX_FUNCTIONS
__device__ __forceinline__ cuda_core_c64::cuda_core_c64(const cuda_core_c128 &z) : re((float)z.re), im((float)z.im) {}
#undef _CC_CX

// NumPy's maximum and minimum of complex values: the first operand if it holds a NaN, else the
// second if it does, else the greater (lesser) in NumPy's order, the first of equal ones.
template <typename Z> __device__ __forceinline__ Z _cc_cx_maximum(Z a, Z b) { return (a != a || a >= b) ? a : b; }
template <typename Z> __device__ __forceinline__ Z _cc_cx_minimum(Z a, Z b) { return (a != a || a <= b) ? a : b; }
// NumPy's clip of complex values: x if it holds a NaN, else x where it is beyond the bound
// comparing real parts, or imaginary parts where the real parts are equal (so a bound's NaN
// imaginary part counts only there), else the bound (also when equal).
template <typename Z> __device__ __forceinline__ Z _cc_cx_clip_low(Z x, Z low) {
    return (x != x || (x.re == low.re ? x.im > low.im : x.re > low.re)) ? x : low;
}
template <typename Z> __device__ __forceinline__ Z _cc_cx_clip_high(Z x, Z high) {
    return (x != x || (x.re == high.re ? x.im < high.im : x.re < high.re)) ? x : high;
}
