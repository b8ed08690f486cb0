//! Reads a 2-D little-endian float32 `.npy` array (NumPy's format: magic, version, header
//! dict, raw data).

/// Returns `(rows, cols, data)` of a C-ordered `<f4` 2-D array. Errors say what is unsupported.
pub fn read_f32_2d(raw: &[u8]) -> Result<(usize, usize, Vec<f32>), String> {
    if raw.len() < 10 || &raw[..6] != b"\x93NUMPY" {
        return Err("not a .npy file".into());
    }
    let (header_len, start) = match raw[6] {
        1 => (u16::from_le_bytes([raw[8], raw[9]]) as usize, 10),
        2 | 3 if raw.len() >= 12 => (
            u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize,
            12,
        ),
        v => return Err(format!(".npy version {v} is not supported")),
    };
    let header = raw
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or("bad .npy header")?;
    if !header.contains("'descr': '<f4'") {
        return Err(format!(
            "expected little-endian float32 data, header {header}"
        ));
    }
    if header.contains("'fortran_order': True") {
        return Err("Fortran-ordered arrays are not supported".into());
    }
    let shape = header
        .split("'shape':")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or("no shape in .npy header")?;
    let dims: Vec<usize> = shape
        .trim_start_matches([' ', '('])
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    let [rows, cols] = dims[..] else {
        return Err(format!("expected a 2-D array, shape ({shape})"));
    };
    let body = &raw[start + header_len..];
    if body.len() != rows * cols * 4 {
        return Err(format!(
            "{} data bytes for shape ({rows}, {cols})",
            body.len()
        ));
    }
    let data = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((rows, cols, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_array_and_refuses_other_types() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let mut raw = b"\x93NUMPY\x01\x00".to_vec();
        raw.extend((header.len() as u16).to_le_bytes());
        raw.extend(header.as_bytes());
        for i in 0..6 {
            raw.extend((i as f32).to_le_bytes());
        }
        let (r, c, d) = read_f32_2d(&raw).unwrap();
        assert_eq!((r, c), (2, 3));
        assert_eq!(d[5], 5.0);
        let bad = String::from_utf8_lossy(&raw).replace("<f4", "<f8");
        assert!(read_f32_2d(bad.as_bytes()).is_err());
    }
}
