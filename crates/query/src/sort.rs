//! ORDER BY: the sorted values of a result that shows only its key, or the permutation of
//! the result rows.
//!
//! Keys become unsigned integers in the key's order (floats by IEEE total order; descending
//! keys complemented; NULLs last either way), so comparisons are one integer compare, and
//! are sorted by least-significant-digit radix sorts (stable, so ties keep row order;
//! passes where every key has the same digit skipped): a 32-bit key alone by value, 4 bytes
//! a move ([`sort_values32`]); one key that differs in 32 bits packed with its row in a
//! `u64`; other single keys as (key, row) pairs. Several keys or text keys: a comparison
//! sort over the keys, ties by row.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int32Type, Int64Type};

enum Key<'a> {
    U64(Vec<u64>),
    Str(&'a arrow::array::StringArray, bool),
}

/// `x`'s bits as an unsigned key in the order of `f32::total_cmp`.
fn f32_key(x: f32) -> u32 {
    let b = x.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | (1 << 31)
    }
}

/// The inverse of [`f32_key`].
fn f32_of_key(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k & !(1 << 31) } else { !k })
}

/// `x`'s bits as an unsigned key in the order of `f64::total_cmp`.
fn f64_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// `x` as an unsigned key in signed order.
fn i32_key(x: i32) -> u32 {
    (x as u32) ^ (1 << 31)
}

/// A 32-bit column without NULLs as keys in its order (descending: complemented).
fn keys32(a: &dyn Array, desc: bool) -> Option<Vec<u32>> {
    if a.null_count() > 0 {
        return None;
    }
    let flip = if desc { u32::MAX } else { 0 };
    match a.data_type() {
        DataType::Int32 => Some(
            a.as_primitive::<Int32Type>()
                .values()
                .iter()
                .map(|&x| i32_key(x) ^ flip)
                .collect(),
        ),
        DataType::Float32 => Some(
            a.as_primitive::<Float32Type>()
                .values()
                .iter()
                .map(|&x| f32_key(x) ^ flip)
                .collect(),
        ),
        _ => None,
    }
}

/// Any numeric column as `u64` keys in its order (descending complemented; NULLs last).
fn ordered(a: &dyn Array, desc: bool) -> Option<Vec<u64>> {
    let mut v: Vec<u64> = match a.data_type() {
        DataType::Int32 => a
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|&x| u64::from(i32_key(x)))
            .collect(),
        DataType::Int64 => a
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|&x| (x as u64) ^ (1 << 63))
            .collect(),
        DataType::Float32 => a
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .map(|&x| u64::from(f32_key(x)))
            .collect(),
        DataType::Float64 => a
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .map(|&x| f64_key(x))
            .collect(),
        DataType::Boolean => a.as_boolean().values().iter().map(u64::from).collect(),
        _ => return None,
    };
    if desc {
        v.iter_mut().for_each(|x| *x = !*x);
    }
    // NULLs last, ascending or descending: u64::MAX, above every other key (saturated).
    if a.null_count() > 0 {
        for (i, x) in v.iter_mut().enumerate() {
            *x = if a.is_null(i) {
                u64::MAX
            } else {
                (*x).min(u64::MAX - 1)
            };
        }
    }
    Some(v)
}

/// Stable LSD radix sort of packed `key << 32 | row` values by their key: three passes of
/// 11, 11 and 10 bits (histograms counted in one pass; a pass where every key has the same
/// digit is skipped). Returns the rows in order.
fn radix_packed(mut a: Vec<u64>) -> Vec<u32> {
    const DIGITS: [(u32, usize); 3] = [(32, 2048), (43, 2048), (54, 1024)];
    let n = a.len();
    let mut hist = vec![vec![0usize; 2048]; 3];
    for &x in &a {
        for (h, &(shift, size)) in hist.iter_mut().zip(&DIGITS) {
            h[((x >> shift) as usize) & (size - 1)] += 1;
        }
    }
    let mut b = vec![0u64; n];
    for (h, &(shift, size)) in hist.iter().zip(&DIGITS) {
        if h.contains(&n) {
            continue;
        }
        let mut pos = vec![0usize; size];
        let mut s = 0;
        for d in 0..size {
            pos[d] = s;
            s += h[d];
        }
        for &x in &a {
            let d = ((x >> shift) as usize) & (size - 1);
            b[pos[d]] = x;
            pos[d] += 1;
        }
        std::mem::swap(&mut a, &mut b);
    }
    a.into_iter().map(|x| x as u32).collect()
}

/// The values of a 32-bit column without NULLs, sorted (for a result that shows only its
/// sort key: 4 bytes moved per element, no permutation): an LSD radix sort of the ordered
/// bits, 8 bits a pass.
pub fn sort_values32(a: &dyn Array, desc: bool) -> Option<ArrayRef> {
    let mut k = keys32(a, desc)?;
    let flip = if desc { u32::MAX } else { 0 };
    let n = k.len();
    let mut hist = [[0usize; 256]; 4];
    for &x in &k {
        for (d, h) in hist.iter_mut().enumerate() {
            h[((x >> (8 * d)) & 0xff) as usize] += 1;
        }
    }
    let mut t = vec![0u32; n];
    for (d, h) in hist.iter().enumerate() {
        if h.contains(&n) {
            continue;
        }
        let mut pos = [0usize; 256];
        let mut s = 0;
        for (p, c) in pos.iter_mut().zip(h) {
            *p = s;
            s += c;
        }
        for &x in &k {
            let b = ((x >> (8 * d)) & 0xff) as usize;
            t[pos[b]] = x;
            pos[b] += 1;
        }
        std::mem::swap(&mut k, &mut t);
    }
    Some(match a.data_type() {
        DataType::Int32 => Arc::new(arrow::array::Int32Array::from(
            k.into_iter()
                .map(|x| (x ^ flip ^ (1 << 31)) as i32)
                .collect::<Vec<_>>(),
        )) as ArrayRef,
        _ => Arc::new(arrow::array::Float32Array::from(
            k.into_iter()
                .map(|x| f32_of_key(x ^ flip))
                .collect::<Vec<_>>(),
        )) as ArrayRef,
    })
}

/// The row order of `cols` (all of length `n`) by `order` (column, descending).
pub fn sort_indices(cols: &[ArrayRef], order: &[(usize, bool)], n: usize) -> Vec<u32> {
    if let [(c, desc)] = order {
        if let Some(k) = keys32(cols[*c].as_ref(), *desc) {
            return radix_packed(
                k.into_iter()
                    .enumerate()
                    .map(|(i, k)| (u64::from(k) << 32) | i as u64)
                    .collect(),
            );
        }
    }
    let keys: Vec<Key> = order
        .iter()
        .map(|&(c, desc)| match ordered(cols[c].as_ref(), desc) {
            Some(v) => Key::U64(v),
            None => Key::Str(cols[c].as_string::<i32>(), desc),
        })
        .collect();
    if let [Key::U64(k)] = keys.as_slice() {
        return radix(k);
    }
    let mut idx: Vec<u32> = (0..n as u32).collect();
    idx.sort_unstable_by(|&a, &b| {
        for k in &keys {
            let o = match k {
                Key::U64(v) => v[a as usize].cmp(&v[b as usize]),
                Key::Str(s, desc) => {
                    let o = s.value(a as usize).cmp(s.value(b as usize));
                    if *desc {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        a.cmp(&b)
    });
    idx
}

/// Stable LSD radix sort of rows by `keys`; returns the rows in order. One pass counts
/// the eight byte histograms; a byte that every key shares costs nothing more. Keys that
/// differ in their low 32 bits only are packed with their row in one `u64`
/// ([`radix_packed`]); others move as (key, row) pairs.
fn radix(keys: &[u64]) -> Vec<u32> {
    let n = keys.len();
    let mut hist = [[0usize; 256]; 8];
    for &k in keys {
        for (b, h) in hist.iter_mut().enumerate() {
            h[((k >> (8 * b)) & 0xff) as usize] += 1;
        }
    }
    let live: Vec<usize> = (0..8).filter(|&b| !hist[b].contains(&n)).collect();
    if live.iter().all(|&b| b < 4) {
        return radix_packed(
            keys.iter()
                .enumerate()
                .map(|(i, &k)| ((k & 0xffff_ffff) << 32) | i as u64)
                .collect(),
        );
    }
    let mut a: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u32))
        .collect();
    let mut b = vec![(0u64, 0u32); n];
    for &byte in &live {
        let shift = 8 * byte;
        let mut pos = [0usize; 256];
        let mut s = 0;
        for d in 0..256 {
            pos[d] = s;
            s += hist[byte][d];
        }
        for &(k, i) in &a {
            let d = ((k >> shift) & 0xff) as usize;
            b[pos[d]] = (k, i);
            pos[d] += 1;
        }
        std::mem::swap(&mut a, &mut b);
    }
    a.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn radix_sorts_stably_with_negative_and_float_keys() {
        let ints: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![3, -1, 3, i64::MIN, 0]));
        assert_eq!(
            sort_indices(std::slice::from_ref(&ints), &[(0, false)], 5),
            [3, 1, 4, 0, 2]
        );
        assert_eq!(sort_indices(&[ints], &[(0, true)], 5), [0, 2, 4, 1, 3]);
        let fl: ArrayRef = Arc::new(arrow::array::Float64Array::from(vec![
            0.5, -2.0, -0.0, 1e300,
        ]));
        assert_eq!(sort_indices(&[fl], &[(0, false)], 4), [1, 2, 0, 3]);
    }

    #[test]
    fn radix_on_32_bit_keys_packed() {
        // Packed LSD on small and large inputs, int32 and
        // float32, ascending and descending, many ties: stable, as a comparison sort.
        for n in [1000usize, 70_001] {
            let v: Vec<i32> = (0..n as i64)
                .map(|i| ((i * 7919) % 1013 - 500) as i32 * 4_000_000 + (i % 3) as i32)
                .chain([i32::MIN, i32::MAX])
                .collect();
            let f: Vec<f32> = v.iter().map(|&x| x as f32 * 0.5).collect();
            let cols: [ArrayRef; 2] = [
                Arc::new(arrow::array::Int32Array::from(v.clone())),
                Arc::new(arrow::array::Float32Array::from(f.clone())),
            ];
            for (c, col) in cols.iter().enumerate() {
                for desc in [false, true] {
                    let got = sort_indices(std::slice::from_ref(col), &[(0, desc)], v.len());
                    let mut want: Vec<u32> = (0..v.len() as u32).collect();
                    want.sort_by(|&a, &b| {
                        let o = if c == 0 {
                            v[a as usize].cmp(&v[b as usize])
                        } else {
                            f[a as usize].total_cmp(&f[b as usize])
                        };
                        (if desc { o.reverse() } else { o }).then(a.cmp(&b))
                    });
                    assert_eq!(got, want, "n {n} column {c} desc {desc}");
                }
            }
        }
    }

    #[test]
    fn values_sorted_alone_equal_a_comparison_sort() {
        let v: Vec<i32> = (0..100_000i64)
            .map(|i| ((i * 2_654_435_761) % 4_294_967_291 - 2_147_483_645) as i32)
            .chain([i32::MIN, i32::MAX, 0, -1])
            .collect();
        let f: Vec<f32> = v
            .iter()
            .map(|&x| x as f32 / 3.0)
            .chain([-0.0, 0.0])
            .collect();
        for desc in [false, true] {
            let got = sort_values32(&arrow::array::Int32Array::from(v.clone()), desc).unwrap();
            let mut want = v.clone();
            want.sort_unstable();
            if desc {
                want.reverse();
            }
            assert_eq!(got.as_primitive::<Int32Type>().values().to_vec(), want);
            let got = sort_values32(&arrow::array::Float32Array::from(f.clone()), desc).unwrap();
            let mut want = f.clone();
            want.sort_by(|a, b| a.total_cmp(b));
            if desc {
                want.reverse();
            }
            let bits = |x: &[f32]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(got.as_primitive::<Float32Type>().values()),
                bits(&want)
            );
        }
    }

    #[test]
    fn several_keys_and_nulls_last() {
        let a: ArrayRef = Arc::new(arrow::array::Int32Array::from(vec![1, 0, 1, 0]));
        let b: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["x", "y", "a", "b"]));
        assert_eq!(
            sort_indices(&[a, b], &[(0, false), (1, true)], 4),
            [1, 3, 0, 2]
        );
        let n: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![Some(2), None, Some(1)]));
        assert_eq!(
            sort_indices(std::slice::from_ref(&n), &[(0, false)], 3),
            [2, 0, 1]
        );
        assert_eq!(sort_indices(&[n], &[(0, true)], 3), [0, 2, 1]);
    }
}
