//! A model's `model.safetensors` read one tensor at a time, as the model asks for it:
//! the file's header is read and checked whole when it is opened, each tensor's
//! bytes only when the model is built, decoded straight into the tensor's own
//! storage. Reading the whole file first, as candle's loaders do without a memory
//! map, held the file and the tensors copied out of it at once: twice the weights at
//! the peak of a load. Here the peak is the weights and one read buffer.
//!
//! The format: an 8-byte little-endian header length, then the header, a JSON object
//! `{name: {dtype, shape, data_offsets: [begin, end]}}` (and an optional
//! `__metadata__` of strings), then the data, which the tensors' offsets (relative to
//! the data's start) must tile exactly, as the reference implementation requires.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Mutex;

use candle_core::{DType, Device, Shape, Tensor, WithDType};
use candle_nn::var_builder::SimpleBackend;
use serde::Deserialize;

/// The longest header read (a BERT's is a few kilobytes; the reference
/// implementation allows 100 MB).
const MAX_HEADER_BYTES: u64 = 16 << 20;
/// Bytes read from the file at a time while a tensor is decoded.
const READ_CHUNK: usize = 64 * 1024;
const METADATA: &str = "__metadata__";

#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error("{size} bytes: too short for a safetensors header")]
    NoHeader { size: u64 },
    #[error(
        "the header's length ({length} bytes) is past the end of the file ({size} bytes) or over the {MAX_HEADER_BYTES}-byte limit"
    )]
    HeaderLength { length: u64, size: u64 },
    #[error("the header is not a safetensors header: {0}")]
    Header(String),
    #[error("tensor {name}: dtype {dtype} is not supported")]
    Dtype { name: String, dtype: String },
    #[error("tensor {name}: shape {shape:?} is too large")]
    Shape { name: String, shape: Vec<usize> },
    #[error(
        "tensor {name}: data_offsets [{begin}, {end}] hold {} bytes, its shape {shape:?} of {dtype:?} needs {needed}",
        end.saturating_sub(*begin)
    )]
    Length {
        name: String,
        dtype: DType,
        shape: Vec<usize>,
        begin: u64,
        end: u64,
        needed: u64,
    },
    #[error(
        "tensor {name}: data_offsets begin at {begin}, where the data before it ends at {expected} (tensors must tile the data without gaps or overlaps)"
    )]
    Offsets {
        name: String,
        begin: u64,
        expected: u64,
    },
    #[error(
        "cut short: the tensors' data ends at byte {end} of the data section, which holds {held} bytes"
    )]
    Truncated { end: u64, held: u64 },
    #[error("{extra} bytes after the last tensor's data")]
    Trailing { extra: u64 },
}

/// One tensor's entry in the header, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [u64; 2],
}

/// Where one tensor's bytes are, checked against the file.
struct Located {
    dtype: DType,
    shape: Vec<usize>,
    /// From the file's start.
    offset: u64,
    elements: usize,
}

/// An open weights file whose tensors the model reads through candle's `VarBuilder`.
pub struct Weights {
    file: Mutex<File>,
    tensors: HashMap<String, Located>,
}

impl Weights {
    /// Reads `file`'s header and checks it against the file's size.
    pub fn open(mut file: File) -> Result<Weights, WeightsError> {
        let size = file.metadata()?.len();
        let mut length = [0u8; 8];
        if size < 8 {
            return Err(WeightsError::NoHeader { size });
        }
        file.read_exact(&mut length)?;
        let length = u64::from_le_bytes(length);
        if length > MAX_HEADER_BYTES || length > size - 8 {
            return Err(WeightsError::HeaderLength { length, size });
        }
        let mut header = vec![0u8; length as usize];
        file.read_exact(&mut header)?;
        let mut entries: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&header).map_err(|e| WeightsError::Header(e.to_string()))?;
        entries.remove(METADATA);
        let data_start = 8 + length;
        let mut tensors = entries
            .into_iter()
            .map(|(name, value)| {
                let entry: Entry = serde_json::from_value(value)
                    .map_err(|e| WeightsError::Header(format!("tensor {name}: {e}")))?;
                locate(name, entry, data_start)
            })
            .collect::<Result<Vec<_>, _>>()?;
        tensors.sort_by_key(|(_, located, _)| located.offset);
        let mut end = data_start;
        for (name, located, bytes) in &tensors {
            if located.offset != end {
                return Err(WeightsError::Offsets {
                    name: name.clone(),
                    begin: located.offset - data_start,
                    expected: end - data_start,
                });
            }
            end += bytes;
        }
        match end.cmp(&size) {
            std::cmp::Ordering::Greater => Err(WeightsError::Truncated {
                end: end - data_start,
                held: size - data_start,
            }),
            std::cmp::Ordering::Less => Err(WeightsError::Trailing { extra: size - end }),
            std::cmp::Ordering::Equal => Ok(Weights {
                file: Mutex::new(file),
                tensors: tensors
                    .into_iter()
                    .map(|(name, located, _)| (name, located))
                    .collect(),
            }),
        }
    }

    /// Reads tensor `name` from the file.
    fn read(&self, name: &str) -> candle_core::Result<Tensor> {
        let located = self.tensors.get(name).ok_or_else(|| {
            candle_core::Error::CannotFindTensor {
                path: name.to_string(),
            }
            .bt()
        })?;
        let mut file = self
            .file
            .lock()
            .map_err(|_| candle_core::Error::Msg("the weights file's lock is poisoned".into()))?;
        file.seek(SeekFrom::Start(located.offset))
            .map_err(|e| reading(name, e))?;
        let tensor = (&mut *file, name, located);
        // The dtypes `dtype` accepts.
        match located.dtype {
            DType::U8 => decode(tensor, u8::from_le_bytes),
            DType::U32 => decode(tensor, u32::from_le_bytes),
            DType::I16 => decode(tensor, i16::from_le_bytes),
            DType::I32 => decode(tensor, i32::from_le_bytes),
            DType::I64 => decode(tensor, i64::from_le_bytes),
            DType::F16 => decode(tensor, half::f16::from_le_bytes),
            DType::BF16 => decode(tensor, half::bf16::from_le_bytes),
            DType::F32 => decode(tensor, f32::from_le_bytes),
            DType::F64 => decode(tensor, f64::from_le_bytes),
            other => Err(candle_core::Error::Msg(format!(
                "tensor {name}: dtype {other:?} is not supported"
            ))),
        }
    }
}

/// `entry` checked on its own: its dtype, and its offsets against its shape. Answers
/// the tensor and its length in bytes.
fn locate(
    name: String,
    entry: Entry,
    data_start: u64,
) -> Result<(String, Located, u64), WeightsError> {
    let Some(dtype) = dtype(&entry.dtype) else {
        return Err(WeightsError::Dtype {
            name,
            dtype: entry.dtype,
        });
    };
    let elements = entry
        .shape
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d));
    let needed = elements.and_then(|n| {
        u64::try_from(n)
            .ok()?
            .checked_mul(dtype.size_in_bytes() as u64)
    });
    let (Some(elements), Some(needed)) = (elements, needed) else {
        return Err(WeightsError::Shape {
            name,
            shape: entry.shape,
        });
    };
    let [begin, end] = entry.data_offsets;
    if end.checked_sub(begin) != Some(needed) {
        return Err(WeightsError::Length {
            name,
            dtype,
            shape: entry.shape,
            begin,
            end,
            needed,
        });
    }
    let offset = data_start
        .checked_add(begin)
        .ok_or_else(|| WeightsError::Header(format!("tensor {name}: offset {begin}")))?;
    Ok((
        name,
        Located {
            dtype,
            shape: entry.shape,
            offset,
            elements,
        },
        needed,
    ))
}

/// The safetensors dtypes candle computes with.
fn dtype(name: &str) -> Option<DType> {
    Some(match name {
        "U8" => DType::U8,
        "U32" => DType::U32,
        "I16" => DType::I16,
        "I32" => DType::I32,
        "I64" => DType::I64,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        _ => return None,
    })
}

fn reading(name: &str, e: std::io::Error) -> candle_core::Error {
    candle_core::Error::Msg(format!("tensor {name}: {e}"))
}

/// The tensor `located` from `file` (at its offset), of `N` little-endian bytes per
/// value: read a chunk at a time into the vector the tensor then owns.
fn decode<T: WithDType, const N: usize>(
    (file, name, located): (&mut File, &str, &Located),
    from_le_bytes: fn([u8; N]) -> T,
) -> candle_core::Result<Tensor> {
    let elements = located.elements;
    let mut values = Vec::with_capacity(elements);
    let mut chunk = vec![0u8; READ_CHUNK - READ_CHUNK % N];
    while values.len() < elements {
        let wanted = ((elements - values.len()) * N).min(chunk.len());
        let bytes = &mut chunk[..wanted];
        file.read_exact(bytes).map_err(|e| reading(name, e))?;
        let (whole, _) = bytes.as_chunks::<N>();
        values.extend(whole.iter().map(|b| from_le_bytes(*b)));
    }
    Tensor::from_vec(values, located.shape.as_slice(), &Device::Cpu)
}

impl SimpleBackend for Weights {
    fn get(
        &self,
        shape: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        // Checked before reading, so that a wrong model is refused without reading it.
        if let Some(located) = self.tensors.get(name)
            && located.shape.as_slice() != shape.dims()
        {
            return Err(candle_core::Error::UnexpectedShape {
                msg: format!("shape mismatch for {name}"),
                expected: shape,
                got: Shape::from_dims(&located.shape),
            }
            .bt());
        }
        self.get_unchecked(name, dtype, device)
    }

    fn get_unchecked(
        &self,
        name: &str,
        dtype: DType,
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        self.read(name)?.to_device(device)?.to_dtype(dtype)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A safetensors file of `header` (as given, however wrong) and `data`.
    fn file(header: &Value, data: &[u8]) -> Vec<u8> {
        let header = header.to_string().into_bytes();
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(&header);
        file.extend_from_slice(data);
        file
    }

    fn open(bytes: &[u8]) -> Result<Weights, WeightsError> {
        let mut temp = tempfile::tempfile().expect("temp file");
        std::io::Write::write_all(&mut temp, bytes).expect("written");
        temp.seek(SeekFrom::Start(0)).expect("rewound");
        Weights::open(temp)
    }

    fn refused(bytes: &[u8], names: &[&str]) {
        let error = open(bytes).err().expect("refused").to_string();
        for name in names {
            assert!(error.contains(name), "{name}: {error}");
        }
    }

    /// Two F32 tensors `a` (2 values) and `b` (3 values), then `c`, an I64 and an
    /// F16 tensor.
    fn mixed() -> (Value, Vec<u8>) {
        let mut data = Vec::new();
        for v in [1.5f32, -2.0, 0.25, 4.0, 5.0] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        for v in [7i64, -9] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        for v in [0.5f32, -3.0] {
            data.extend_from_slice(&half::f16::from_f32(v).to_le_bytes());
        }
        let header = json!({
            "__metadata__": {"format": "pt"},
            "b": {"dtype": "F32", "shape": [3, 1], "data_offsets": [8, 20]},
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "c": {"dtype": "I64", "shape": [2], "data_offsets": [20, 36]},
            "d": {"dtype": "F16", "shape": [1, 2], "data_offsets": [36, 40]},
        });
        (header, data)
    }

    #[test]
    fn each_tensor_is_read_as_written_in_the_dtype_asked_for() {
        let (header, data) = mixed();
        let weights = open(&file(&header, &data)).expect("opens");
        let cpu = Device::Cpu;
        let get = |name: &str, dims: &[usize]| {
            weights.get(
                Shape::from_dims(dims),
                name,
                candle_nn::Init::Const(0.0),
                DType::F32,
                &cpu,
            )
        };
        let a = get("a", &[2]).expect("a");
        assert_eq!(a.to_vec1::<f32>().unwrap(), [1.5, -2.0]);
        let b = get("b", &[3, 1]).expect("b");
        assert_eq!(b.to_vec2::<f32>().unwrap(), [[0.25], [4.0], [5.0]]);
        let c = weights.get_unchecked("c", DType::I64, &cpu).expect("c");
        assert_eq!(c.to_vec1::<i64>().unwrap(), [7, -9]);
        let d = get("d", &[1, 2]).expect("d");
        assert_eq!(d.to_vec2::<f32>().unwrap(), [[0.5, -3.0]]);
        // Another shape than the model's, or a tensor the file lacks: named.
        let error = get("b", &[3]).expect_err("wrong shape").to_string();
        assert!(error.contains("shape mismatch for b"), "{error}");
        let error = get("e", &[1]).expect_err("missing").to_string();
        assert!(error.contains("cannot find tensor e"), "{error}");
        assert!(weights.contains_tensor("a") && !weights.contains_tensor("e"));
    }

    #[test]
    fn a_header_that_lies_about_the_data_is_refused_naming_the_problem() {
        let (header, data) = mixed();
        let whole = file(&header, &data);
        // Cut short: the last tensor's data is missing.
        refused(&whole[..whole.len() - 3], &["cut short", "40", "37"]);
        // More data than the tensors use.
        let mut longer = whole.clone();
        longer.push(0);
        refused(&longer, &["1 bytes after"]);
        // Offsets that overlap, leave a gap, or disagree with the shape.
        let lie = |name: &str, offsets: Value| {
            let mut header = header.clone();
            header[name]["data_offsets"] = offsets;
            file(&header, &data)
        };
        refused(
            &lie("b", json!([4, 16])),
            &["tensor b", "begin at 4", "ends at 8"],
        );
        refused(
            &lie("b", json!([8, 16])),
            &["tensor b", "[8, 16]", "needs 12"],
        );
        refused(&lie("a", json!([8, 0])), &["tensor a", "[8, 0]"]);
        refused(
            &lie("d", json!([40, 44])),
            &["tensor d", "begin at 40", "ends at 36"],
        );
        // A dtype candle does not compute with, a field of no safetensors header.
        let mut header_f8 = header.clone();
        header_f8["c"]["dtype"] = "F8_E5M2".into();
        refused(&file(&header_f8, &data), &["tensor c", "F8_E5M2"]);
        let mut odd = header.clone();
        odd["a"]["offsets"] = json!([0, 8]);
        refused(&file(&odd, &data), &["tensor a", "offsets"]);
        refused(&file(&json!([1, 2]), &data), &["not a safetensors header"]);
        // A header length past the file's end, a file too short for one.
        let mut past = whole.clone();
        past[..8].copy_from_slice(&(whole.len() as u64).to_le_bytes());
        refused(&past, &["past the end"]);
        refused(b"\x10\x00", &["too short"]);
    }
}
