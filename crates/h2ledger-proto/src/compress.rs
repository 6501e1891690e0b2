//! `grpc-encoding` decompression, capped.
//!
//! gzip is RFC 1952 (members read one after another, as Go's `gzip.Reader` does by default).
//! gRPC's `deflate` is the zlib format, RFC 1950: grpc core's `message_compress.cc` inflates
//! it with `inflateInit2(&zs, 15)`, and grpc-java's `Codec.Deflate` uses a wrapping
//! `Deflater`; bytes without a valid zlib header are read as raw deflate (RFC 1951).
//! The output stops one byte past the cap: a message that inflates past it is a
//! decompression bomb and is not read further (grpc-go does the same with
//! `io.LimitReader(dcReader, maxReceiveMessageSize+1)` in `rpc_util.go`).

use std::io::Read;

/// Why a message could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecompressError {
    /// The output would pass the cap.
    Cap,
    /// The compressed bytes are damaged (flate2's message).
    Bad(String),
}

/// The encodings this crate reads, by their `grpc-encoding` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Identity,
    Gzip,
    Deflate,
}

impl Encoding {
    pub(crate) fn from_header(v: Option<&str>) -> Option<Encoding> {
        match v.map(str::trim) {
            None | Some("") => Some(Encoding::Identity),
            Some(s) if s.eq_ignore_ascii_case("identity") => Some(Encoding::Identity),
            Some(s) if s.eq_ignore_ascii_case("gzip") => Some(Encoding::Gzip),
            Some(s) if s.eq_ignore_ascii_case("deflate") => Some(Encoding::Deflate),
            Some(_) => None,
        }
    }
}

/// Inflates `input` into a new buffer of at most `cap` bytes.
pub(crate) fn decompress(
    enc: Encoding,
    input: &[u8],
    cap: usize,
) -> Result<Vec<u8>, DecompressError> {
    match enc {
        Encoding::Identity => Ok(input.to_vec()),
        Encoding::Gzip => read_capped(flate2::read::MultiGzDecoder::new(input), cap),
        Encoding::Deflate => {
            if zlib_header(input) {
                read_capped(flate2::read::ZlibDecoder::new(input), cap)
            } else {
                read_capped(flate2::read::DeflateDecoder::new(input), cap)
            }
        }
    }
}

/// RFC 1950 section 2.2: CM = 8 (deflate), CINFO <= 7, and CMF*256+FLG a multiple of 31.
fn zlib_header(b: &[u8]) -> bool {
    match b {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

fn read_capped(r: impl Read, cap: usize) -> Result<Vec<u8>, DecompressError> {
    let mut out = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    r.take(limit)
        .read_to_end(&mut out)
        .map_err(|e| DecompressError::Bad(e.to_string()))?;
    if out.len() > cap {
        return Err(DecompressError::Cap);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_and_deflate_round_trip() {
        let data = b"hello hello hello hello";
        assert_eq!(decompress(Encoding::Gzip, &gz(data), 100).unwrap(), data);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        assert_eq!(
            decompress(Encoding::Deflate, &z.finish().unwrap(), 100).unwrap(),
            data
        );
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        d.write_all(data).unwrap();
        assert_eq!(
            decompress(Encoding::Deflate, &d.finish().unwrap(), 100).unwrap(),
            data
        );
    }

    #[test]
    fn bombs_stop_at_the_cap() {
        let big = vec![0u8; 10 << 20];
        let small = gz(&big);
        assert!(small.len() < 20_000);
        assert_eq!(
            decompress(Encoding::Gzip, &small, 4 << 20),
            Err(DecompressError::Cap)
        );
        assert_eq!(
            decompress(Encoding::Gzip, &small, 10 << 20).unwrap().len(),
            10 << 20
        );
    }

    #[test]
    fn damaged_input_is_an_error() {
        let mut g = gz(b"abcdef");
        let n = g.len();
        g[n - 5] ^= 0xff; // CRC/ISIZE trailer
        assert!(matches!(
            decompress(Encoding::Gzip, &g, 100),
            Err(DecompressError::Bad(_))
        ));
        assert!(matches!(
            decompress(Encoding::Gzip, b"not gzip", 100),
            Err(DecompressError::Bad(_))
        ));
        assert_eq!(Encoding::from_header(Some("snappy")), None);
        assert_eq!(Encoding::from_header(Some("GZIP")), Some(Encoding::Gzip));
    }
}
