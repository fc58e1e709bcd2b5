//! Values exchanged with a kernel call: scalars and arrays.

use crate::ScalarTy;
use std::fmt;

/// A scalar value of one of the language's types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `bool`.
    Bool(bool),
    /// `char`.
    I8(i8),
    /// `int`.
    I32(i32),
    /// `long`.
    I64(i64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
}

impl Scalar {
    /// Its type.
    pub fn ty(self) -> ScalarTy {
        match self {
            Scalar::Bool(_) => ScalarTy::Bool,
            Scalar::I8(_) => ScalarTy::I8,
            Scalar::I32(_) => ScalarTy::I32,
            Scalar::I64(_) => ScalarTy::I64,
            Scalar::F32(_) => ScalarTy::F32,
            Scalar::F64(_) => ScalarTy::F64,
        }
    }

    /// Converts to `ty` with the language's conversion rules (see [`crate::ExprKind::Cast`]).
    pub fn convert(self, ty: ScalarTy) -> Scalar {
        match ty {
            ScalarTy::Bool => Scalar::Bool(match self {
                Scalar::Bool(b) => b,
                Scalar::I8(v) => v != 0,
                Scalar::I32(v) => v != 0,
                Scalar::I64(v) => v != 0,
                Scalar::F32(v) => v != 0.0,
                Scalar::F64(v) => v != 0.0,
            }),
            // Integers keep their low 8 bits; floats truncate and saturate to -128..=127
            // (NaN → 0), as to `int` and `long`.
            ScalarTy::I8 => Scalar::I8(match self {
                Scalar::Bool(b) => b as i8,
                Scalar::I8(v) => v,
                Scalar::I32(v) => v as i8,
                Scalar::I64(v) => v as i8,
                Scalar::F32(v) => v as i8,
                Scalar::F64(v) => v as i8,
            }),
            ScalarTy::I32 => Scalar::I32(match self {
                Scalar::Bool(b) => b as i32,
                Scalar::I8(v) => v as i32,
                Scalar::I32(v) => v,
                Scalar::I64(v) => v as i32,
                Scalar::F32(v) => v as i32,
                Scalar::F64(v) => v as i32,
            }),
            ScalarTy::I64 => Scalar::I64(match self {
                Scalar::Bool(b) => b as i64,
                Scalar::I8(v) => v as i64,
                Scalar::I32(v) => v as i64,
                Scalar::I64(v) => v,
                Scalar::F32(v) => v as i64,
                Scalar::F64(v) => v as i64,
            }),
            ScalarTy::F32 => Scalar::F32(match self {
                Scalar::Bool(b) => b as i32 as f32,
                Scalar::I8(v) => v as f32,
                Scalar::I32(v) => v as f32,
                Scalar::I64(v) => v as f32,
                Scalar::F32(v) => v,
                Scalar::F64(v) => v as f32,
            }),
            ScalarTy::F64 => Scalar::F64(match self {
                Scalar::Bool(b) => b as i32 as f64,
                Scalar::I8(v) => v as f64,
                Scalar::I32(v) => v as f64,
                Scalar::I64(v) => v as f64,
                Scalar::F32(v) => v as f64,
                Scalar::F64(v) => v,
            }),
        }
    }

    /// Parses a command-line value for a parameter of type `ty` (`-D n=100`, `-D alpha=1.5`,
    /// `-D flag=true`).
    pub fn parse(text: &str, ty: ScalarTy) -> Result<Scalar, String> {
        let t = text.trim();
        let bad = || format!("`{t}` is not a valid {ty} value");
        Ok(match ty {
            ScalarTy::Bool => match t {
                "1" | "true" => Scalar::Bool(true),
                "0" | "false" => Scalar::Bool(false),
                _ => return Err(bad()),
            },
            ScalarTy::I8 => Scalar::I8(
                parse_c_int(t)
                    .and_then(|v| i8::try_from(v).ok())
                    .ok_or_else(bad)?,
            ),
            ScalarTy::I32 => Scalar::I32(
                parse_c_int(t)
                    .and_then(|v| i32::try_from(v).ok())
                    .ok_or_else(bad)?,
            ),
            ScalarTy::I64 => Scalar::I64(parse_c_int(t).ok_or_else(bad)?),
            ScalarTy::F32 => Scalar::F32(t.parse().map_err(|_| bad())?),
            ScalarTy::F64 => Scalar::F64(t.parse().map_err(|_| bad())?),
        })
    }

    /// The value as `i64` (integers and bool only; floats truncate).
    pub fn as_i64(self) -> i64 {
        match self.convert(ScalarTy::I64) {
            Scalar::I64(v) => v,
            _ => unreachable!(),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", *b as i32),
            Scalar::I8(v) => write!(f, "{v}"),
            Scalar::I32(v) => write!(f, "{v}"),
            Scalar::I64(v) => write!(f, "{v}"),
            // Shortest representation that round-trips.
            Scalar::F32(v) => write!(f, "{v:?}"),
            Scalar::F64(v) => write!(f, "{v:?}"),
        }
    }
}

/// The elements of an array, row-major (C order).
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayElems {
    /// `bool` elements.
    Bool(Vec<bool>),
    /// `char` elements.
    I8(Vec<i8>),
    /// `int` elements.
    I32(Vec<i32>),
    /// `long` elements.
    I64(Vec<i64>),
    /// `float` elements.
    F32(Vec<f32>),
    /// `double` elements.
    F64(Vec<f64>),
}

impl ArrayElems {
    /// `len` zero elements of type `ty`; `None` if the allocation fails.
    pub fn zeros(ty: ScalarTy, len: usize) -> Option<ArrayElems> {
        fn z<T: Clone + Default>(len: usize) -> Option<Vec<T>> {
            let mut v = Vec::new();
            v.try_reserve_exact(len).ok()?;
            v.resize(len, T::default());
            Some(v)
        }
        Some(match ty {
            ScalarTy::Bool => ArrayElems::Bool(z(len)?),
            ScalarTy::I8 => ArrayElems::I8(z(len)?),
            ScalarTy::I32 => ArrayElems::I32(z(len)?),
            ScalarTy::I64 => ArrayElems::I64(z(len)?),
            ScalarTy::F32 => ArrayElems::F32(z(len)?),
            ScalarTy::F64 => ArrayElems::F64(z(len)?),
        })
    }
    /// Element type.
    pub fn ty(&self) -> ScalarTy {
        match self {
            ArrayElems::Bool(_) => ScalarTy::Bool,
            ArrayElems::I8(_) => ScalarTy::I8,
            ArrayElems::I32(_) => ScalarTy::I32,
            ArrayElems::I64(_) => ScalarTy::I64,
            ArrayElems::F32(_) => ScalarTy::F32,
            ArrayElems::F64(_) => ScalarTy::F64,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ArrayElems::Bool(v) => v.len(),
            ArrayElems::I8(v) => v.len(),
            ArrayElems::I32(v) => v.len(),
            ArrayElems::I64(v) => v.len(),
            ArrayElems::F32(v) => v.len(),
            ArrayElems::F64(v) => v.len(),
        }
    }
    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads element `i`.
    pub fn get(&self, i: usize) -> Scalar {
        match self {
            ArrayElems::Bool(v) => Scalar::Bool(v[i]),
            ArrayElems::I8(v) => Scalar::I8(v[i]),
            ArrayElems::I32(v) => Scalar::I32(v[i]),
            ArrayElems::I64(v) => Scalar::I64(v[i]),
            ArrayElems::F32(v) => Scalar::F32(v[i]),
            ArrayElems::F64(v) => Scalar::F64(v[i]),
        }
    }
    /// Writes element `i`; `x` must already have the element type.
    pub fn set(&mut self, i: usize, x: Scalar) {
        match (self, x) {
            (ArrayElems::Bool(v), Scalar::Bool(x)) => v[i] = x,
            (ArrayElems::I8(v), Scalar::I8(x)) => v[i] = x,
            (ArrayElems::I32(v), Scalar::I32(x)) => v[i] = x,
            (ArrayElems::I64(v), Scalar::I64(x)) => v[i] = x,
            (ArrayElems::F32(v), Scalar::F32(x)) => v[i] = x,
            (ArrayElems::F64(v), Scalar::F64(x)) => v[i] = x,
            (a, x) => panic!("type confusion: storing {:?} into {} array", x, a.ty()),
        }
    }
    /// Replaces every NaN by the canonical quiet NaN (`f64::NAN`, `f32::NAN`: positive, payload
    /// zero), as checksums and comparisons do (see `docs/language.md`).
    pub fn canonicalize_nans(&mut self) {
        match self {
            ArrayElems::F64(v) => v
                .iter_mut()
                .filter(|x| x.is_nan())
                .for_each(|x| *x = f64::NAN),
            ArrayElems::F32(v) => v
                .iter_mut()
                .filter(|x| x.is_nan())
                .for_each(|x| *x = f32::NAN),
            _ => {}
        }
    }
    /// Little-endian bytes of the elements (bool as one byte 0/1), as stored in `.npy` files.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            ArrayElems::Bool(v) => v.iter().map(|&b| b as u8).collect(),
            ArrayElems::I8(v) => v.iter().map(|&x| x as u8).collect(),
            ArrayElems::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayElems::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayElems::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayElems::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
    /// Elements of type `ty` from little-endian bytes; `None` if the length does not fit.
    pub fn from_le_bytes(ty: ScalarTy, b: &[u8]) -> Option<ArrayElems> {
        if !b.len().is_multiple_of(ty.size_bytes()) {
            return None;
        }
        Some(match ty {
            ScalarTy::Bool => ArrayElems::Bool(b.iter().map(|&x| x != 0).collect()),
            ScalarTy::I8 => ArrayElems::I8(b.iter().map(|&x| x as i8).collect()),
            ScalarTy::I32 => ArrayElems::I32(
                b.chunks_exact(4)
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            ScalarTy::I64 => ArrayElems::I64(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            ScalarTy::F32 => ArrayElems::F32(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            ScalarTy::F64 => ArrayElems::F64(
                b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
        })
    }
}

/// An array argument or result: elements plus shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayData {
    /// Extents, outermost first.
    pub shape: Vec<usize>,
    /// Row-major elements; `elems.len()` is the product of `shape`.
    pub elems: ArrayElems,
}

impl ArrayData {
    /// A zero array; `None` if the size overflows or cannot be allocated.
    pub fn zeros(ty: ScalarTy, shape: &[usize]) -> Option<ArrayData> {
        let len = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        Some(ArrayData {
            shape: shape.to_vec(),
            elems: ArrayElems::zeros(ty, len)?,
        })
    }
    /// Fills the array with the documented seeded pseudo-random values: SplitMix64 seeded with
    /// `seed ^ fnv1a(name)`; floats uniform in `[0, 1)` (the top 53 or 24 bits), integers
    /// uniform in `[0, 100]` (`char` included), bools `0`/`1`.
    pub fn fill_random(&mut self, seed: u64, name: &str) {
        let mut state = seed ^ fnv1a(name.as_bytes());
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        match &mut self.elems {
            ArrayElems::Bool(v) => v.iter_mut().for_each(|x| *x = next() >> 63 == 1),
            ArrayElems::I8(v) => v.iter_mut().for_each(|x| *x = (next() % 101) as i8),
            ArrayElems::I32(v) => v.iter_mut().for_each(|x| *x = (next() % 101) as i32),
            ArrayElems::I64(v) => v.iter_mut().for_each(|x| *x = (next() % 101) as i64),
            ArrayElems::F32(v) => v
                .iter_mut()
                .for_each(|x| *x = (next() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)),
            ArrayElems::F64(v) => v
                .iter_mut()
                .for_each(|x| *x = (next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)),
        }
    }
    /// An order-sensitive checksum of the elements: FNV-1a over their little-endian bytes,
    /// every NaN first replaced by the canonical quiet NaN (`0x7ff8000000000000`,
    /// `0x7fc00000`): the sign and payload of a NaN result are unspecified.
    pub fn checksum(&self) -> u64 {
        let mut canon = self.elems.clone();
        canon.canonicalize_nans();
        fnv1a(&canon.to_le_bytes())
    }
    /// The sum of the elements as `f64` (a human-readable summary).
    pub fn sum(&self) -> f64 {
        (0..self.elems.len())
            .map(|i| match self.elems.get(i).convert(ScalarTy::F64) {
                Scalar::F64(x) => x,
                _ => unreachable!(),
            })
            .sum()
    }
}

/// An integer as C spells it, optionally signed: decimal, octal with a leading `0` (`010` is
/// 8, as in a `#define`), or hexadecimal with `0x`. `None` if it is not one or overflows.
pub fn parse_c_int(t: &str) -> Option<i64> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let mag = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(h, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse::<u64>().ok()?
    };
    if neg {
        0i64.checked_sub_unsigned(mag)
    } else {
        i64::try_from(mag).ok()
    }
}

/// 64-bit FNV-1a hash.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// An argument of a kernel call: a scalar, or an array that the call may modify in place.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A scalar parameter.
    Scalar(Scalar),
    /// An array parameter; after the call it holds the kernel's results.
    Array(ArrayData),
}

/// `fmin` as Tessera defines it (IEEE 754-2019 `minimumNumber`): a NaN operand is ignored
/// unless both are NaN (then the result is NaN); `-0.0` is less than `+0.0`.
pub fn fmin_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b {
        a
    } else if b < a {
        b
    } else {
        // Equal: the same bits, or zeros of either sign (-0 if either is -0).
        f64::from_bits(a.to_bits() | b.to_bits())
    }
}

/// `fmax` as Tessera defines it (IEEE 754-2019 `maximumNumber`): a NaN operand is ignored
/// unless both are NaN; `+0.0` is greater than `-0.0`.
pub fn fmax_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b {
        a
    } else if b > a {
        b
    } else {
        f64::from_bits(a.to_bits() & b.to_bits())
    }
}

/// [`fmin_f64`] on `float` (`fminf`).
pub fn fmin_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b {
        a
    } else if b < a {
        b
    } else {
        f32::from_bits(a.to_bits() | b.to_bits())
    }
}

/// [`fmax_f64`] on `float` (`fmaxf`).
pub fn fmax_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b {
        a
    } else if b > a {
        b
    } else {
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

#[cfg(test)]
mod minmax_tests {
    use super::*;
    #[test]
    fn signed_zeros_and_nans() {
        let bits = |x: f64| x.to_bits();
        assert_eq!(bits(fmin_f64(0.0, -0.0)), bits(-0.0));
        assert_eq!(bits(fmin_f64(-0.0, 0.0)), bits(-0.0));
        assert_eq!(bits(fmax_f64(0.0, -0.0)), bits(0.0));
        assert_eq!(bits(fmax_f64(-0.0, 0.0)), bits(0.0));
        assert_eq!(fmin_f64(f64::NAN, 1.0), 1.0);
        assert_eq!(fmin_f64(1.0, f64::NAN), 1.0);
        assert_eq!(fmax_f64(f64::NAN, -1.0), -1.0);
        assert!(fmin_f64(f64::NAN, f64::NAN).is_nan());
        assert_eq!(fmin_f64(2.0, -3.0), -3.0);
        assert_eq!(fmax_f64(2.0, -3.0), 2.0);
        assert_eq!(fmin_f32(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fmax_f32(-0.0, 0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(fmax_f32(f32::NAN, 5.0), 5.0);
    }
}

#[cfg(test)]
mod nan_tests {
    use super::*;
    #[test]
    fn checksums_canonicalise_nans() {
        let a = ArrayData {
            shape: vec![2],
            elems: ArrayElems::F64(vec![f64::from_bits(0xfff8_0000_0000_0000), 1.0]),
        };
        let b = ArrayData {
            shape: vec![2],
            elems: ArrayElems::F64(vec![f64::from_bits(0x7ff8_0000_0000_0001), 1.0]),
        };
        assert_eq!(a.checksum(), b.checksum());
        let c = ArrayData {
            shape: vec![1],
            elems: ArrayElems::F32(vec![f32::from_bits(0xffc0_0001)]),
        };
        let d = ArrayData {
            shape: vec![1],
            elems: ArrayElems::F32(vec![f32::NAN]),
        };
        assert_eq!(c.checksum(), d.checksum());
    }
}

#[cfg(test)]
mod parse_tests {
    use super::*;
    #[test]
    fn c_integers() {
        assert_eq!(parse_c_int("010"), Some(8));
        assert_eq!(parse_c_int("10"), Some(10));
        assert_eq!(parse_c_int("0"), Some(0));
        assert_eq!(parse_c_int("-0x1F"), Some(-31));
        assert_eq!(parse_c_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_c_int("9223372036854775808"), None);
        assert_eq!(parse_c_int("08"), None);
        assert_eq!(parse_c_int("--1"), None);
        assert_eq!(Scalar::parse("010", ScalarTy::I32), Ok(Scalar::I32(8)));
        assert!(Scalar::parse("4294967296", ScalarTy::I32).is_err());
        assert_eq!(Scalar::parse("-128", ScalarTy::I8), Ok(Scalar::I8(-128)));
        assert_eq!(Scalar::parse("0x7f", ScalarTy::I8), Ok(Scalar::I8(127)));
        assert!(Scalar::parse("128", ScalarTy::I8).is_err());
        assert!(Scalar::parse("-129", ScalarTy::I8).is_err());
    }

    #[test]
    fn char_conversions() {
        // Integers keep their low 8 bits (as gcc does).
        assert_eq!(Scalar::I32(200).convert(ScalarTy::I8), Scalar::I8(-56));
        assert_eq!(Scalar::I32(-129).convert(ScalarTy::I8), Scalar::I8(127));
        assert_eq!(
            Scalar::I64(0x1_0000_0041).convert(ScalarTy::I8),
            Scalar::I8(65)
        );
        assert_eq!(Scalar::Bool(true).convert(ScalarTy::I8), Scalar::I8(1));
        // Floats truncate and saturate to the type's range, NaN → 0 (as to `int`).
        assert_eq!(Scalar::F64(100.7).convert(ScalarTy::I8), Scalar::I8(100));
        assert_eq!(Scalar::F64(-1.9).convert(ScalarTy::I8), Scalar::I8(-1));
        assert_eq!(Scalar::F64(300.7).convert(ScalarTy::I8), Scalar::I8(127));
        assert_eq!(Scalar::F32(-1e10).convert(ScalarTy::I8), Scalar::I8(-128));
        assert_eq!(Scalar::F32(f32::NAN).convert(ScalarTy::I8), Scalar::I8(0));
        // Promotion: sign extension.
        assert_eq!(Scalar::I8(-56).convert(ScalarTy::I32), Scalar::I32(-56));
        assert_eq!(Scalar::I8(-1).convert(ScalarTy::I64), Scalar::I64(-1));
        assert_eq!(Scalar::I8(-3).convert(ScalarTy::F64), Scalar::F64(-3.0));
        assert_eq!(Scalar::I8(0).convert(ScalarTy::Bool), Scalar::Bool(false));
        let a = ArrayElems::I8(vec![-1, 2, -128]);
        assert_eq!(a.to_le_bytes(), vec![0xff, 2, 0x80]);
        assert_eq!(
            ArrayElems::from_le_bytes(ScalarTy::I8, &a.to_le_bytes()),
            Some(a)
        );
    }
}
