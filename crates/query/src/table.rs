//! Tables: Arrow record batches, read from CSV, Parquet or `.npy` files or registered from
//! Rust, and the column types the compiled pipelines take.
//!
//! Columns of type `Int32`, `Int64`, `Float32` and `Float64` reach the kernels without a
//! copy (each batch's buffer is passed read-only as a kernel array). Narrower integers and
//! `Boolean` are widened to `Int32`, `UInt32` to `Int64`, once when the table is made; text
//! columns (`Utf8`, `LargeUtf8`) may be grouped by (dictionary-encoded per query) and
//! selected. A column with nulls is refused when a query uses it (NULL is not supported).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Int32Type, Int64Type, Schema};

use crate::error::{QueryError, Result};

/// The type of a value in a compiled pipeline (a column, an expression).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A truth value (comparisons, AND/OR); C `int` 0/1 in the kernels.
    Bool,
    /// 32-bit integer (`int`).
    I32,
    /// 64-bit integer (`long`).
    I64,
    /// 32-bit float (`float`).
    F32,
    /// 64-bit float (`double`).
    F64,
    /// Text: only selected or grouped by, never computed on.
    Str,
}

impl Ty {
    /// The kernel language's name of the type.
    pub fn c(self) -> &'static str {
        match self {
            Ty::Bool => "int",
            Ty::I32 => "int",
            Ty::I64 => "long",
            Ty::F32 => "float",
            Ty::F64 => "double",
            Ty::Str => "<text>",
        }
    }
    /// Integer (or truth value).
    pub fn is_int(self) -> bool {
        matches!(self, Ty::Bool | Ty::I32 | Ty::I64)
    }
    /// Floating point.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
    /// A number (not text).
    pub fn is_num(self) -> bool {
        self != Ty::Str
    }
    /// The SQL name, for messages.
    pub fn sql(self) -> &'static str {
        match self {
            Ty::Bool => "BOOLEAN",
            Ty::I32 => "INTEGER",
            Ty::I64 => "BIGINT",
            Ty::F32 => "FLOAT",
            Ty::F64 => "DOUBLE",
            Ty::Str => "VARCHAR",
        }
    }
    /// The Arrow type of a result column of this type.
    pub fn arrow(self) -> DataType {
        match self {
            Ty::Bool => DataType::Boolean,
            Ty::I32 => DataType::Int32,
            Ty::I64 => DataType::Int64,
            Ty::F32 => DataType::Float32,
            Ty::F64 => DataType::Float64,
            Ty::Str => DataType::Utf8,
        }
    }
}

/// A table: a schema and its record batches (each batch's columns are contiguous).
#[derive(Clone, Debug)]
pub struct Table {
    /// The name queries use (`FROM name`), or the file path it was read from.
    pub name: String,
    /// The columns' names and Arrow types (after widening, see the module doc).
    pub schema: Arc<Schema>,
    /// The data.
    pub batches: Vec<RecordBatch>,
}

impl Table {
    /// A table of the given batches (all of one schema). Columns of types the pipelines do
    /// not take directly are widened (see the module doc); others are refused.
    pub fn new(name: &str, batches: Vec<RecordBatch>) -> Result<Table> {
        let data_err = |msg: String| QueryError::Data {
            path: name.to_string(),
            msg,
        };
        let Some(first) = batches.first() else {
            return Err(data_err("no record batches (and so no schema)".into()));
        };
        let schema0 = first.schema();
        let mut fields = Vec::new();
        for f in schema0.fields() {
            let t = widened(f.data_type()).ok_or_else(|| {
                data_err(format!(
                    "column `{}` has type {}, which queries do not support (integers, floats, booleans and text are)",
                    f.name(),
                    f.data_type()
                ))
            })?;
            fields.push(Field::new(f.name(), t, f.is_nullable()));
        }
        let schema = Arc::new(Schema::new(fields));
        let mut out = Vec::with_capacity(batches.len());
        for b in &batches {
            if b.schema().fields().len() != schema0.fields().len() {
                return Err(data_err("record batches of different schemas".into()));
            }
            let mut cols: Vec<ArrayRef> = Vec::new();
            for (c, f) in b.columns().iter().zip(schema.fields()) {
                if c.data_type() == f.data_type() {
                    cols.push(c.clone());
                } else {
                    cols.push(
                        arrow::compute::cast(c, f.data_type())
                            .map_err(|e| data_err(format!("column `{}`: {e}", f.name())))?,
                    );
                }
            }
            out.push(
                RecordBatch::try_new(schema.clone(), cols).map_err(|e| data_err(e.to_string()))?,
            );
        }
        Ok(Table {
            name: name.to_string(),
            schema,
            batches: out,
        })
    }

    /// Reads a table from a file: `.csv` (header row, types inferred), `.parquet`, `.npy`
    /// (one 1-D array: a column named after the file), or a directory of 1-D `.npy` files of
    /// equal length (a column each, in name order).
    pub fn read(path: &Path) -> Result<Table> {
        let name = path.display().to_string();
        let data_err = |msg: String| QueryError::Data {
            path: name.clone(),
            msg,
        };
        if path.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .map_err(|e| data_err(e.to_string()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "npy"))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(data_err("a directory with no .npy files".into()));
            }
            let mut fields = Vec::new();
            let mut cols = Vec::new();
            for f in &files {
                let (field, col) = read_npy(f)?;
                if let Some(c0) = cols.first() {
                    let c0: &ArrayRef = c0;
                    if c0.len() != col.len() {
                        return Err(data_err(format!(
                            "{} has {} elements, {} has {}",
                            files[0].display(),
                            c0.len(),
                            f.display(),
                            col.len()
                        )));
                    }
                }
                fields.push(field);
                cols.push(col);
            }
            let b = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
                .map_err(|e| data_err(e.to_string()))?;
            return Table::new(&name, vec![b]);
        }
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "csv" => {
                let mut f = File::open(path).map_err(|e| data_err(e.to_string()))?;
                let format = arrow::csv::reader::Format::default().with_header(true);
                let (schema, _) = format
                    .infer_schema(&mut f, Some(10_000))
                    .map_err(|e| data_err(format!("cannot infer the CSV schema: {e}")))?;
                let f = File::open(path).map_err(|e| data_err(e.to_string()))?;
                let reader = arrow::csv::ReaderBuilder::new(Arc::new(schema))
                    .with_header(true)
                    .with_batch_size(1 << 20)
                    .build(f)
                    .map_err(|e| data_err(e.to_string()))?;
                let batches = reader
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| data_err(format!("malformed CSV: {e}")))?;
                table_or_empty(&name, batches)
            }
            "parquet" => {
                let f = File::open(path).map_err(|e| data_err(e.to_string()))?;
                let builder =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
                        .map_err(|e| data_err(format!("not a readable Parquet file: {e}")))?;
                let schema = builder.schema().clone();
                let reader = builder
                    .with_batch_size(1 << 20)
                    .build()
                    .map_err(|e| data_err(e.to_string()))?;
                let mut batches = reader
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| data_err(format!("malformed Parquet: {e}")))?;
                if batches.is_empty() {
                    batches.push(RecordBatch::new_empty(schema));
                }
                Table::new(&name, batches)
            }
            "npy" => {
                let (field, col) = read_npy(path)?;
                let b = RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![col])
                    .map_err(|e| data_err(e.to_string()))?;
                Table::new(&name, vec![b])
            }
            _ => Err(data_err(
                "unknown file type: expected .csv, .parquet, .npy or a directory of .npy".into(),
            )),
        }
    }

    /// Total number of rows.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// The pipeline type of column `c`.
    pub fn ty(&self, c: usize) -> Ty {
        pipeline_ty(self.schema.field(c).data_type())
    }
}

fn table_or_empty(name: &str, batches: Vec<RecordBatch>) -> Result<Table> {
    if batches.is_empty() {
        return Err(QueryError::Data {
            path: name.to_string(),
            msg: "no rows and no header".into(),
        });
    }
    Table::new(name, batches)
}

/// The type a column of Arrow type `t` is kept as, or `None` if unsupported.
fn widened(t: &DataType) -> Option<DataType> {
    Some(match t {
        DataType::Int32 | DataType::Int64 | DataType::Float32 | DataType::Float64 => t.clone(),
        DataType::Int8
        | DataType::Int16
        | DataType::UInt8
        | DataType::UInt16
        | DataType::Boolean => DataType::Int32,
        DataType::UInt32 => DataType::Int64,
        DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8,
        _ => return None,
    })
}

/// The pipeline type of a (widened) Arrow type.
pub(crate) fn pipeline_ty(t: &DataType) -> Ty {
    match t {
        DataType::Int32 => Ty::I32,
        DataType::Int64 => Ty::I64,
        DataType::Float32 => Ty::F32,
        DataType::Float64 => Ty::F64,
        _ => Ty::Str,
    }
}

/// A numeric column's values, borrowed from the Arrow buffer (no copy).
pub(crate) enum Values<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// The values of numeric column `a` (of a widened table).
pub(crate) fn values(a: &dyn Array) -> Values<'_> {
    match a.data_type() {
        DataType::Int32 => Values::I32(a.as_primitive::<Int32Type>().values()),
        DataType::Int64 => Values::I64(a.as_primitive::<Int64Type>().values()),
        DataType::Float32 => Values::F32(a.as_primitive::<Float32Type>().values()),
        _ => Values::F64(a.as_primitive::<Float64Type>().values()),
    }
}

fn read_npy(path: &Path) -> Result<(Field, ArrayRef)> {
    use tessera_ir::ArrayElems;
    let err = |msg: String| QueryError::Data {
        path: path.display().to_string(),
        msg,
    };
    let a = tessera_ir::npy::read(path).map_err(err)?;
    if a.shape.len() != 1 {
        return Err(err(format!(
            "a column must be a 1-D array; this one has shape {:?}",
            a.shape
        )));
    }
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "x".into());
    let col: ArrayRef = match a.elems {
        ArrayElems::I32(v) => Arc::new(arrow::array::Int32Array::from(v)),
        ArrayElems::I64(v) => Arc::new(arrow::array::Int64Array::from(v)),
        ArrayElems::F32(v) => Arc::new(arrow::array::Float32Array::from(v)),
        ArrayElems::F64(v) => Arc::new(arrow::array::Float64Array::from(v)),
        ArrayElems::I8(v) => Arc::new(arrow::array::Int32Array::from(
            v.into_iter().map(i32::from).collect::<Vec<_>>(),
        )),
        ArrayElems::Bool(v) => Arc::new(arrow::array::Int32Array::from(
            v.into_iter().map(i32::from).collect::<Vec<_>>(),
        )),
    };
    Ok((Field::new(name, col.data_type().clone(), false), col))
}
