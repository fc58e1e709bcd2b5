//! Reading and writing NumPy `.npy` files (format version 1.0/2.0/3.0, little-endian,
//! C order), the exchange format of `tessera run --input/--out`.

use crate::{ArrayData, ArrayElems, ScalarTy};
use std::io::Write;
use std::path::Path;

/// Writes `a` to `path` as `.npy` (version 1.0).
pub fn write(path: &Path, a: &ArrayData) -> std::io::Result<()> {
    let shape = match a.shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", a.shape[0]),
        _ => format!(
            "({})",
            a.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        a.elems.ty().npy_descr(),
        shape
    );
    // Magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    f.write_all(b"\x93NUMPY\x01\x00")?;
    f.write_all(&(header.len() as u16).to_le_bytes())?;
    f.write_all(header.as_bytes())?;
    f.write_all(&a.elems.to_le_bytes())?;
    f.flush()
}

/// Reads an `.npy` file. Errors are messages for the user. Only regular files are read
/// (not `/dev/zero` or a pipe), so the read is bounded by the file's size.
pub fn read(path: &Path) -> Result<ArrayData, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "cannot read `{}`: not a regular file",
            path.display()
        ));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("`{}` is not a valid .npy file: {e}", path.display()))
}

/// A value of the header dictionary.
#[derive(Debug, PartialEq)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// Parses the header, a Python dict literal with exactly the keys `descr` (a string),
/// `fortran_order` (`True`/`False`) and `shape` (a tuple of non-negative integers), each once,
/// in any order, with an optional trailing comma; then padding spaces and a newline.
fn parse_header(h: &str) -> Result<(String, bool, Vec<usize>), String> {
    let b = h.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    let expect = |i: &mut usize, c: u8| -> Result<(), String> {
        if b.get(*i) == Some(&c) {
            *i += 1;
            Ok(())
        } else {
            Err(format!(
                "malformed header: expected `{}` at byte {}",
                c as char, *i
            ))
        }
    };
    let string = |i: &mut usize| -> Result<String, String> {
        let q = *b.get(*i).ok_or("malformed header: unexpected end")?;
        if q != b'\'' && q != b'"' {
            return Err(format!(
                "malformed header: expected a string at byte {}",
                *i
            ));
        }
        let start = *i + 1;
        let end = b[start..]
            .iter()
            .position(|&c| c == q || c == b'\\')
            .map(|k| start + k)
            .ok_or("malformed header: unterminated string")?;
        if b[end] != q {
            return Err("malformed header: escapes in strings are not supported".into());
        }
        *i = end + 1;
        Ok(h[start..end].to_string())
    };
    ws(&mut i);
    expect(&mut i, b'{')?;
    let mut entries: Vec<(String, Value)> = Vec::new();
    loop {
        ws(&mut i);
        if b.get(i) == Some(&b'}') {
            i += 1;
            break;
        }
        let key = string(&mut i)?;
        ws(&mut i);
        expect(&mut i, b':')?;
        ws(&mut i);
        let value = match b.get(i) {
            Some(b'\'') | Some(b'"') => Value::Str(string(&mut i)?),
            Some(b'(') => {
                i += 1;
                let mut dims = Vec::new();
                loop {
                    ws(&mut i);
                    if b.get(i) == Some(&b')') {
                        i += 1;
                        break;
                    }
                    let s = i;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                    let d = h[s..i].parse::<u64>().map_err(|_| {
                        format!("malformed header: bad extent at byte {s} of 'shape'")
                    })?;
                    dims.push(d);
                    ws(&mut i);
                    match b.get(i) {
                        Some(b',') => i += 1,
                        Some(b')') => {
                            if dims.len() == 1 {
                                return Err(
                                    "malformed header: a 1-tuple needs a trailing comma: `(n,)`"
                                        .into(),
                                );
                            }
                        }
                        _ => {
                            return Err(format!(
                                "malformed header: expected `,` or `)` at byte {i}"
                            ))
                        }
                    }
                }
                Value::Tuple(dims)
            }
            _ if h[i..].starts_with("True") => {
                i += 4;
                Value::Bool(true)
            }
            _ if h[i..].starts_with("False") => {
                i += 5;
                Value::Bool(false)
            }
            _ => {
                return Err(format!(
                    "malformed header: unexpected value for '{key}' at byte {i}"
                ))
            }
        };
        if entries.iter().any(|(k, _)| *k == key) {
            return Err(format!("malformed header: key '{key}' appears twice"));
        }
        entries.push((key, value));
        ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {}
            _ => {
                return Err(format!(
                    "malformed header: expected `,` or `}}` at byte {i}"
                ))
            }
        }
    }
    ws(&mut i);
    if i != b.len() {
        return Err(format!(
            "malformed header: unexpected text after the dictionary at byte {i}"
        ));
    }
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (k, v) in entries {
        match (k.as_str(), v) {
            ("descr", Value::Str(s)) => descr = Some(s),
            ("fortran_order", Value::Bool(f)) => fortran = Some(f),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            ("descr" | "fortran_order" | "shape", v) => {
                return Err(format!("malformed header: bad value {v:?} for '{k}'"))
            }
            (k, _) => return Err(format!("malformed header: unknown key '{k}'")),
        }
    }
    let shape = shape
        .ok_or("header has no 'shape'")?
        .into_iter()
        .map(|d| usize::try_from(d).map_err(|_| "shape too large".to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        descr.ok_or("header has no 'descr'")?,
        fortran.ok_or("header has no 'fortran_order'")?,
        shape,
    ))
}

fn parse(b: &[u8]) -> Result<ArrayData, String> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err("missing the \\x93NUMPY magic".into());
    }
    let (hlen, start): (usize, usize) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        2 | 3 if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        v => return Err(format!("unsupported format version {v}")),
    };
    let header = b
        .get(start..start.saturating_add(hlen))
        .ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    let (descr, fortran, shape) = parse_header(header)?;
    let ty = match descr.as_str() {
        "<f8" => ScalarTy::F64,
        "<f4" => ScalarTy::F32,
        "<i4" => ScalarTy::I32,
        "<i8" => ScalarTy::I64,
        "|b1" => ScalarTy::Bool,
        "|i1" => ScalarTy::I8,
        other => {
            return Err(format!(
                "unsupported dtype '{other}' (expected <f8, <f4, <i4, <i8, |i1 or |b1)"
            ))
        }
    };
    if fortran {
        return Err("Fortran-order arrays are not supported; save with C order".into());
    }
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or("shape too large")?;
    let data = &b[start + hlen..];
    let want = n.checked_mul(ty.size_bytes()).ok_or("shape too large")?;
    if data.len() != want {
        return Err(format!(
            "expected {want} bytes of data for shape {shape:?}, found {}",
            data.len()
        ));
    }
    let elems = ArrayElems::from_le_bytes(ty, data).ok_or("bad data length")?;
    Ok(ArrayData { shape, elems })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trip() {
        let dir = std::env::temp_dir().join(format!("tessera-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.npy");
        let a = ArrayData {
            shape: vec![2, 3],
            elems: ArrayElems::F64(vec![1.0, 2.5, -3.0, 0.0, 1e300, f64::MIN_POSITIVE]),
        };
        write(&p, &a).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        // Header + magic is a multiple of 64 bytes, as NumPy requires.
        assert_eq!((bytes.len() - 48) % 64, 0);
        assert_eq!(read(&p).unwrap(), a);
        let b = ArrayData {
            shape: vec![0],
            elems: ArrayElems::I32(vec![]),
        };
        write(&p, &b).unwrap();
        assert_eq!(read(&p).unwrap(), b);
        // `char` arrays: NumPy's int8, one byte per element, two's complement.
        let c = ArrayData {
            shape: vec![2, 2],
            elems: ArrayElems::I8(vec![-128, -1, 0, 127]),
        };
        write(&p, &c).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let header = std::str::from_utf8(&bytes[10..bytes.len() - 4]).unwrap();
        assert!(header.contains("'descr': '|i1'"), "{header}");
        assert_eq!(&bytes[bytes.len() - 4..], &[0x80, 0xff, 0x00, 0x7f]);
        assert_eq!(read(&p).unwrap(), c);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    #[test]
    fn int8_data_from_numpy() {
        // As `np.save(f, np.array([-3, 100], dtype=np.int8))` writes it.
        let h = "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }\n";
        let a = parse(&npy(h, &[0xfd, 100])).unwrap();
        assert_eq!(a.elems, ArrayElems::I8(vec![-3, 100]));
        // One byte per element: a wrong length is an error.
        assert!(parse(&npy(h, &[1, 2, 3])).is_err());
        // Unsigned bytes are not `char`.
        let u = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }\n";
        assert!(parse(&npy(u, &[1, 2])).is_err());
    }
    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(header.len() as u16).to_le_bytes());
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        b
    }
    #[test]
    fn header_parsed_strictly() {
        let ok = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }   \n";
        assert_eq!(
            parse(&npy(ok, &[1, 0, 0, 0, 2, 0, 0, 0])).unwrap().shape,
            vec![2]
        );
        // Key order and quotes are free; no trailing comma is fine.
        let ok2 = "{\"shape\": (1, 2), \"descr\": \"<i4\", \"fortran_order\": False}\n";
        assert_eq!(parse(&npy(ok2, &[0; 8])).unwrap().shape, vec![1, 2]);
        // Zero-size shapes are arrays like any other.
        let z = "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5), }\n";
        assert_eq!(parse(&npy(z, &[])).unwrap().shape, vec![0, 5]);
        let z1 = "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }\n";
        assert_eq!(parse(&npy(z1, &[])).unwrap().elems.len(), 0);
        let bad = [
            // `'descr':` inside another value.
            "{'shape': (2,), 'fortran_order': False, 'x': \"'descr': '<i4'\"}\n",
            "{'descr': '<i4', 'fortran_order': 1, 'shape': (2,)}\n",
            "{'descr': '<i4', 'fortran_order': True, 'shape': (2,)}\n",
            "{'descr': '<i4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}\n",
            "{'descr': '<i4', 'fortran_order': False}\n",
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2)}\n",
            "{'descr': '<i4', 'fortran_order': False, 'shape': (-2,)}\n",
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)} junk\n",
            "{'descr': '<i4' 'fortran_order': False, 'shape': (2,)}\n",
        ];
        for h in bad {
            assert!(parse(&npy(h, &[0; 8])).is_err(), "accepted {h}");
        }
    }
    #[test]
    fn rejects_non_regular_files() {
        assert!(read(Path::new("/dev/zero"))
            .unwrap_err()
            .contains("not a regular file"));
    }
    #[test]
    fn rejects_garbage() {
        assert!(parse(b"hello").is_err());
        assert!(parse(b"\x93NUMPY\x01\x00\xff\x00{").is_err());
    }
}
