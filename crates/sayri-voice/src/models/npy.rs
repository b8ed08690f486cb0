//! Reads a 2-D little-endian float32 `.npy` array (NumPy's format: magic, version, header
//! dict, raw data).

/// What a `.npy` file holds that this reader does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// No `.npy` magic.
    #[error("not a .npy file")]
    NotNpy,
    /// A format version other than 1–3.
    #[error(".npy version {0} is not supported")]
    Version(u8),
    /// The header is cut short or not UTF-8.
    #[error("bad .npy header")]
    BadHeader,
    /// Data other than little-endian float32.
    #[error("expected little-endian float32 data, header {0}")]
    NotF32(String),
    /// Fortran (column-major) order.
    #[error("Fortran-ordered arrays are not supported")]
    FortranOrder,
    /// No `shape` in the header.
    #[error("no shape in .npy header")]
    NoShape,
    /// A shape of other than two dimensions.
    #[error("expected a 2-D array, shape ({0})")]
    NotTwoD(String),
    /// The data length does not match the shape.
    #[error("{bytes} data bytes for shape ({rows}, {cols})")]
    Length {
        /// Data bytes present.
        bytes: usize,
        /// Rows of the shape.
        rows: usize,
        /// Columns of the shape.
        cols: usize,
    },
}

/// Returns `(rows, cols, data)` of a C-ordered `<f4` 2-D array.
///
/// # Errors
/// [`NpyError`]: what is unsupported.
pub fn read_f32_2d(raw: &[u8]) -> Result<(usize, usize, Vec<f32>), NpyError> {
    if raw.len() < 10 || &raw[..6] != b"\x93NUMPY" {
        return Err(NpyError::NotNpy);
    }
    let (header_len, start) = match raw[6] {
        1 => (u16::from_le_bytes([raw[8], raw[9]]) as usize, 10),
        2 | 3 if raw.len() >= 12 => (
            u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize,
            12,
        ),
        v => return Err(NpyError::Version(v)),
    };
    let header = raw
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or(NpyError::BadHeader)?;
    if !header.contains("'descr': '<f4'") {
        return Err(NpyError::NotF32(header.to_string()));
    }
    if header.contains("'fortran_order': True") {
        return Err(NpyError::FortranOrder);
    }
    let shape = header
        .split("'shape':")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or(NpyError::NoShape)?;
    let dims: Vec<usize> = shape
        .trim_start_matches([' ', '('])
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    let [rows, cols] = dims[..] else {
        return Err(NpyError::NotTwoD(shape.to_string()));
    };
    let body = &raw[start + header_len..];
    if body.len() != rows * cols * 4 {
        return Err(NpyError::Length {
            bytes: body.len(),
            rows,
            cols,
        });
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
