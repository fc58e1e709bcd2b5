//! Reading and writing NumPy `.npy` files (format version 1.0/2.0/3.0, little-endian,
//! C order), the exchange format of `tessera run --input/--out`.

use std::io::Write;
use std::path::Path;
use tessera_ir::{ArrayData, ArrayElems, ScalarTy};

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

/// Reads an `.npy` file. Errors are messages for the user.
pub fn read(path: &Path) -> Result<ArrayData, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("`{}` is not a valid .npy file: {e}", path.display()))
}

fn parse(b: &[u8]) -> Result<ArrayData, String> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err("missing the \\x93NUMPY magic".into());
    }
    let (hlen, start) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        2 | 3 if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        v => return Err(format!("unsupported format version {v}")),
    };
    let header = b.get(start..start + hlen).ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    let field = |key: &str| -> Result<&str, String> {
        let k = format!("'{key}':");
        let i = header.find(&k).ok_or(format!("header has no '{key}'"))?;
        Ok(header[i + k.len()..].trim_start())
    };
    let descr = field("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or("bad 'descr'")?;
    let ty = match descr {
        "<f8" => ScalarTy::F64,
        "<f4" => ScalarTy::F32,
        "<i4" => ScalarTy::I32,
        "<i8" => ScalarTy::I64,
        "|b1" => ScalarTy::Bool,
        other => {
            return Err(format!(
                "unsupported dtype '{other}' (expected <f8, <f4, <i4, <i8 or |b1)"
            ))
        }
    };
    if field("fortran_order")?.starts_with("True") {
        return Err("Fortran-order arrays are not supported; save with C order".into());
    }
    let shape_txt = field("shape")?;
    let close = shape_txt.find(')').ok_or("bad 'shape'")?;
    let inner = shape_txt.get(1..close).ok_or("bad 'shape'")?;
    let mut shape = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        shape.push(
            part.parse::<usize>()
                .map_err(|_| format!("bad extent `{part}` in 'shape'"))?,
        );
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
    #[test]
    fn rejects_garbage() {
        assert!(parse(b"hello").is_err());
        assert!(parse(b"\x93NUMPY\x01\x00\xff\x00{").is_err());
    }
}
