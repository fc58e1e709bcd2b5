//! The embedding API: compile a kernel from source once, call it by argument name.
//!
//! [`Kernel::compile`] (or [`Kernel::builder`] for `-D` overrides and a file name) checks and
//! JIT-compiles a program through a process-wide cache; [`Kernel::call`] takes named
//! arguments collected in [`Args`], checks them against the entry's declaration and runs the
//! compiled code on the caller's memory.
//!
//! # Zero copy
//!
//! Arrays passed as `&mut [T]` slices ([`Args::array`]) or as standard-layout
//! `ndarray::ArrayViewMut`s ([`Args::array_nd`]) are handed to the compiled code as
//! pointers: nothing is copied in or out, and the kernel writes its results in place.
//! Scalars are passed by value.
//!
//! # Checks
//!
//! Before anything runs, every argument is checked against the entry's parameters: each must
//! be given exactly once by name, scalars must convert without loss of kind (see
//! [`Args::scalar`]), arrays must have the parameter's element type, and their shape must
//! equal the declared extents evaluated from the scalar arguments (as the interpreter does).
//! Any failure is a [`CallError`] naming the argument, what was expected and what was given.
//! A failure while running (index out of bounds, division by zero, ...) is
//! [`CallError::Runtime`] with the interpreter's [`RuntimeError`].
//!
//! ```
//! use tessera_jit::{Args, Kernel, Options};
//!
//! let src = "void gemm(int ni, int nj, int nk, double alpha, double beta,
//!                      double C[ni][nj], double A[ni][nk], double B[nk][nj]) {
//!     for (int i = 0; i < ni; i++)
//!         for (int j = 0; j < nj; j++) {
//!             C[i][j] *= beta;
//!             for (int k = 0; k < nk; k++) C[i][j] += alpha * A[i][k] * B[k][j];
//!         }
//! }";
//! let gemm = Kernel::compile(src, "gemm", &Options::default()).unwrap();
//! let (ni, nj, nk) = (2, 3, 2);
//! let a = [1.0, 2.0, 3.0, 4.0]; // 2 x 2
//! let b = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]; // 2 x 3
//! let mut c = vec![1.0; ni * nj];
//! let (mut a, mut b) = (a.to_vec(), b.to_vec());
//! gemm.call(
//!     &mut Args::new()
//!         .scalar("ni", ni)
//!         .scalar("nj", nj)
//!         .scalar("nk", nk)
//!         .scalar("alpha", 1.0)
//!         .scalar("beta", 0.5)
//!         .array("C", &mut c, &[ni, nj])
//!         .array("A", &mut a, &[ni, nk])
//!         .array("B", &mut b, &[nk, nj]),
//! )
//! .unwrap();
//! assert_eq!(c, [1.5, 2.5, 3.5, 3.5, 4.5, 7.5]);
//! ```
//!
//! With `ndarray` (re-exported as [`crate::ndarray`]):
//!
//! ```
//! use tessera_jit::ndarray::{array, Array2};
//! use tessera_jit::{Args, Kernel, Options};
//!
//! let src = "double trace_and_double(int n, double M[n][n]) {
//!     double t = 0;
//!     for (int i = 0; i < n; i++) { t += M[i][i]; M[i][i] *= 2; }
//!     return t;
//! }";
//! let k = Kernel::compile(src, "trace_and_double", &Options::default()).unwrap();
//! let mut m: Array2<f64> = array![[1.0, 2.0], [3.0, 4.0]];
//! let t = k.call(&mut Args::new().scalar("n", 2).array_nd("M", &mut m)).unwrap();
//! assert_eq!(t, Some(tessera_jit::Scalar::F64(5.0)));
//! assert_eq!(m, array![[2.0, 2.0], [3.0, 8.0]]);
//! ```
//!
//! Errors: a shape that differs from the declaration, and an index out of bounds.
//!
//! ```
//! use tessera_jit::{Args, CallError, ErrorKind, Kernel, Options};
//!
//! let src = "void shift(int n, int d, double x[n]) {
//!     for (int i = 0; i < n; i++) x[i] = x[i + d];
//! }";
//! let k = Kernel::compile(src, "shift", &Options::default()).unwrap();
//! let mut x = vec![1.0, 2.0, 3.0, 4.0];
//!
//! // n = 3 declares x[3], but 4 elements are passed.
//! let err = k.call(&mut Args::new().scalar("n", 3).scalar("d", 0).array("x", &mut x, &[4]));
//! match err {
//!     Err(CallError::Shape { ref arg, ref expected, ref given, .. }) => {
//!         assert_eq!((arg.as_str(), expected.as_slice(), given.as_slice()), ("x", &[3i64][..], &[4usize][..]));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(
//!     err.unwrap_err().to_string(),
//!     "argument `x`: shape [4] does not match the declared `double x[n]` = [3]"
//! );
//!
//! // d = 1 reads x[4] when i = 3.
//! let err = k
//!     .call(&mut Args::new().scalar("n", 4).scalar("d", 1).array("x", &mut x, &[4]))
//!     .unwrap_err();
//! let rt = err.runtime().expect("a run-time error");
//! assert!(matches!(&rt.kind, ErrorKind::IndexOutOfBounds { array, index, .. }
//!     if array == "x" && index == &[4]));
//! assert_eq!((rt.loc.line, rt.function.as_str()), (2, "shift"));
//! println!("{err}"); // 2:44: runtime error: index out of bounds: x[4] but `x` has shape [4] ...
//! ```

use crate::{cached_program, CacheError, Compiled, JitError, Options, RawArg};
use ndarray::{ArrayViewMut, Dimension};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use tessera_ir::{
    print, ArgValue, ArrayData, ArrayElems, FuncId, Program, RuntimeError, Scalar, ScalarTy,
    VarKind,
};

/// A failure to compile a kernel.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The source was rejected by the front end. `rendered` is the diagnostics as a compiler
    /// prints them (`file:line:col: error: ...`, the source line and a caret).
    #[error("{rendered}")]
    Frontend {
        /// The rendered diagnostics (ends with a newline).
        rendered: String,
        /// The diagnostics themselves.
        diagnostics: Vec<tessera_syntax::Diagnostic>,
    },
    /// The program has no function called `entry`.
    #[error("{file}: no function named `{entry}` (the program defines {})", list(.available))]
    NoSuchFunction {
        /// The requested entry.
        entry: String,
        /// The file name used for diagnostics.
        file: String,
        /// The functions the program does define.
        available: Vec<String>,
    },
    /// The back end failed (LLVM error or unsupported construct).
    #[error(transparent)]
    Jit(#[from] JitError),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "no functions".to_string()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn shape_list<T: fmt::Display>(v: &[T]) -> String {
    v.iter().map(|x| format!("[{x}]")).collect()
}

fn scalar_desc(s: &Scalar) -> String {
    format!("`{s}` ({})", s.ty())
}

/// A failure of [`Kernel::call`]: a bad argument (detected before anything runs) or a
/// run-time error of the kernel.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CallError {
    /// A parameter was not given.
    #[error("missing argument `{arg}`: `{function}` expects `{expected}`")]
    Missing {
        /// The parameter's name.
        arg: String,
        /// The entry function.
        function: String,
        /// The parameter's declaration (`double A[ni][nk]`).
        expected: String,
    },
    /// An argument names no parameter.
    #[error("unknown argument `{arg}`: the parameters of `{function}` are {}", list(.params))]
    Unknown {
        /// The name given.
        arg: String,
        /// The entry function.
        function: String,
        /// Its parameter names.
        params: Vec<String>,
    },
    /// The same name was given twice.
    #[error("argument `{arg}` given twice")]
    Duplicate {
        /// The name.
        arg: String,
    },
    /// A scalar for an array parameter or an array for a scalar parameter.
    #[error("argument `{arg}`: expected `{expected}`, given {given}")]
    Kind {
        /// The parameter's name.
        arg: String,
        /// The parameter's declaration.
        expected: String,
        /// What was passed.
        given: String,
    },
    /// A scalar of a type that does not convert to the parameter's type (a float for an
    /// integer, anything but `bool` for a `bool`, ...), or out of its range.
    #[error("argument `{arg}`: expected {}, given {}", article(.expected), scalar_desc(.given))]
    ScalarType {
        /// The parameter's name.
        arg: String,
        /// The parameter's type.
        expected: ScalarTy,
        /// The value passed.
        given: Scalar,
    },
    /// A `usize` scalar too large for any parameter type.
    #[error("argument `{arg}`: {given} does not fit in a `long`")]
    ScalarRange {
        /// The parameter's name.
        arg: String,
        /// The value passed.
        given: u64,
    },
    /// An array of the wrong element type.
    #[error("argument `{arg}`: expected an array of `{expected}`, given an array of `{given}`")]
    ElemType {
        /// The parameter's name.
        arg: String,
        /// The parameter's element type.
        expected: ScalarTy,
        /// The element type passed.
        given: ScalarTy,
    },
    /// An array whose shape is not the declared one (evaluated from the scalar arguments).
    #[error("argument `{arg}`: shape {} does not match the declared `{decl}` = {}", shape_list(.given), shape_list(.expected))]
    Shape {
        /// The parameter's name.
        arg: String,
        /// The parameter's declaration, for the message.
        #[doc(hidden)]
        decl: String,
        /// The declared extents.
        expected: Vec<i64>,
        /// The shape passed.
        given: Vec<usize>,
    },
    /// A slice whose length is not the product of the shape given with it.
    #[error("argument `{arg}`: a slice of {len} elements cannot have shape {}", shape_list(.shape))]
    Length {
        /// The argument's name.
        arg: String,
        /// The shape given.
        shape: Vec<usize>,
        /// The slice's length.
        len: usize,
    },
    /// An `ndarray` view that is not in standard (C-contiguous, row-major) layout.
    #[error("argument `{arg}`: the array view is not C-contiguous (shape {}, strides {strides:?}); pass a standard-layout array, e.g. `.as_standard_layout()` into an owned copy", shape_list(.shape))]
    NotContiguous {
        /// The argument's name.
        arg: String,
        /// The view's shape.
        shape: Vec<usize>,
        /// The view's strides, in elements.
        strides: Vec<isize>,
    },
    /// A read-only array ([`Args::array_ref`]) for a parameter the function may write.
    #[error("argument `{arg}`: `{function}` may write this array, so it must be passed mutably (`Args::array`), not read-only")]
    ReadOnly {
        /// The argument's name.
        arg: String,
        /// The entry function.
        function: String,
    },
    /// The kernel was compiled without guards (`Options::guards == false`): the safe
    /// [`Kernel::call`] refuses it; only the `unsafe` [`Kernel::call_unchecked`] runs it.
    #[error("`{function}` was compiled without guards (`Options::guards == false`); only the unsafe `Kernel::call_unchecked` may call it")]
    Unguarded {
        /// The entry function.
        function: String,
    },
    /// The kernel failed while running: the same error as the interpreter's.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

fn article(t: &ScalarTy) -> String {
    let a = if matches!(t, ScalarTy::I32) {
        "an"
    } else {
        "a"
    };
    format!("{a} `{t}`")
}

impl CallError {
    /// The run-time error, if this is one.
    pub fn runtime(&self) -> Option<&RuntimeError> {
        match self {
            CallError::Runtime(e) => Some(e),
            _ => None,
        }
    }
    /// The name of the argument at fault, for argument errors.
    pub fn arg(&self) -> Option<&str> {
        match self {
            CallError::Missing { arg, .. }
            | CallError::Unknown { arg, .. }
            | CallError::Duplicate { arg }
            | CallError::Kind { arg, .. }
            | CallError::ScalarType { arg, .. }
            | CallError::ScalarRange { arg, .. }
            | CallError::ElemType { arg, .. }
            | CallError::Shape { arg, .. }
            | CallError::Length { arg, .. }
            | CallError::NotContiguous { arg, .. }
            | CallError::ReadOnly { arg, .. } => Some(arg),
            CallError::Unguarded { .. } | CallError::Runtime(_) => None,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Rust types that can be passed as scalar arguments: `bool`, `i8`, `i32`, `i64`, `f32`,
/// `f64`, `usize`, `u32` and [`Scalar`].
pub trait IntoScalar: sealed::Sealed {
    /// The value, or the `u64` that does not fit in `i64`.
    #[doc(hidden)]
    fn into_scalar(self) -> Result<Scalar, u64>;
}

macro_rules! into_scalar {
    ($($t:ty => $v:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl IntoScalar for $t {
            fn into_scalar(self) -> Result<Scalar, u64> {
                Ok(Scalar::$v(self))
            }
        }
    )*};
}
into_scalar!(bool => Bool, i8 => I8, i32 => I32, i64 => I64, f32 => F32, f64 => F64);

impl sealed::Sealed for Scalar {}
impl IntoScalar for Scalar {
    fn into_scalar(self) -> Result<Scalar, u64> {
        Ok(self)
    }
}
impl sealed::Sealed for u32 {}
impl IntoScalar for u32 {
    fn into_scalar(self) -> Result<Scalar, u64> {
        Ok(Scalar::I64(self as i64))
    }
}
impl sealed::Sealed for usize {}
impl IntoScalar for usize {
    fn into_scalar(self) -> Result<Scalar, u64> {
        i64::try_from(self)
            .map(Scalar::I64)
            .map_err(|_| self as u64)
    }
}

/// Element types of array arguments: `bool`, `i8`, `i32`, `i64`, `f32`, `f64` (the language's
/// `bool`, `char`, `int`, `long`, `float`, `double`).
pub trait Element: sealed::Sealed + Copy + 'static {
    /// The language type.
    const TY: ScalarTy;
}
impl Element for bool {
    const TY: ScalarTy = ScalarTy::Bool;
}
impl Element for i8 {
    const TY: ScalarTy = ScalarTy::I8;
}
impl Element for i32 {
    const TY: ScalarTy = ScalarTy::I32;
}
impl Element for i64 {
    const TY: ScalarTy = ScalarTy::I64;
}
impl Element for f32 {
    const TY: ScalarTy = ScalarTy::F32;
}
impl Element for f64 {
    const TY: ScalarTy = ScalarTy::F64;
}

enum Item {
    Scalar(Scalar),
    BadScalar(u64),
    Array {
        elem: ScalarTy,
        ptr: *mut u8,
        len: usize,
        shape: Vec<usize>,
        /// Borrowed shared (`Args::array_ref`): the call refuses a parameter the function
        /// may write, and nothing is ever written through `ptr`.
        readonly: bool,
    },
    NonContiguous {
        shape: Vec<usize>,
        strides: Vec<isize>,
    },
}

/// Named arguments of a [`Kernel::call`], built by chaining. Arrays are borrowed mutably for
/// `'a` and written in place by the call (no copies).
///
/// Problems with individual arguments (a slice length that does not match its shape, a
/// non-contiguous view) are reported by the call, as a [`CallError`] naming the argument.
#[derive(Default)]
pub struct Args<'a> {
    items: Vec<(String, Item)>,
    _borrow: PhantomData<&'a mut ()>,
}

impl fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut l = f.debug_map();
        for (n, it) in &self.items {
            match it {
                Item::Scalar(s) => l.entry(n, s),
                Item::BadScalar(v) => l.entry(n, v),
                Item::Array { elem, shape, .. } => {
                    l.entry(n, &format_args!("{elem}{}", shape_list(shape)))
                }
                Item::NonContiguous { shape, .. } => {
                    l.entry(n, &format_args!("non-contiguous{}", shape_list(shape)))
                }
            };
        }
        l.finish()
    }
}

impl<'a> Args<'a> {
    /// No arguments yet.
    pub fn new() -> Args<'a> {
        Args::default()
    }

    /// A scalar argument. Conversions to the parameter's type are checked at the call:
    /// integers convert to integer parameters if the value fits (`long` → `int` only in
    /// range, and `char` parameters take integers in -128..=127) and to floating-point
    /// parameters if exactly representable; `float` → `double`
    /// always, `double` → `float` rounds to nearest (as C does); `bool` only to `bool`.
    /// Anything else (a float for an integer parameter, an integer for a `bool`) is a
    /// [`CallError::ScalarType`].
    pub fn scalar(mut self, name: &str, value: impl IntoScalar) -> Args<'a> {
        let it = match value.into_scalar() {
            Ok(s) => Item::Scalar(s),
            Err(v) => Item::BadScalar(v),
        };
        self.items.push((name.to_string(), it));
        self
    }

    /// An array argument: row-major elements with the given shape (outermost extent first).
    /// `data.len()` must be the product of `shape`. The kernel works on `data` in place.
    pub fn array<T: Element>(mut self, name: &str, data: &'a mut [T], shape: &[usize]) -> Args<'a> {
        self.items.push((
            name.to_string(),
            Item::Array {
                elem: T::TY,
                len: data.len(),
                ptr: data.as_mut_ptr() as *mut u8,
                shape: shape.to_vec(),
                readonly: false,
            },
        ));
        self
    }

    /// A read-only array argument: row-major elements with the given shape, borrowed
    /// shared, so immutable buffers (Arrow columns, memory maps) are passed without a copy.
    /// The call refuses it ([`CallError::ReadOnly`]) for a parameter the function may write,
    /// directly or through a call; otherwise as [`array`](Self::array).
    pub fn array_ref<T: Element>(mut self, name: &str, data: &'a [T], shape: &[usize]) -> Args<'a> {
        self.items.push((
            name.to_string(),
            Item::Array {
                elem: T::TY,
                len: data.len(),
                ptr: data.as_ptr() as *mut u8,
                shape: shape.to_vec(),
                readonly: true,
            },
        ));
        self
    }

    /// An `ndarray` argument: a mutable view (or `&mut` of an owned array) in standard
    /// layout (C-contiguous, row-major); its shape is the array's. Another layout (a
    /// transposed or sliced view) is reported by the call as [`CallError::NotContiguous`].
    /// The kernel works on the array's memory in place.
    pub fn array_nd<T: Element, D: Dimension>(
        mut self,
        name: &str,
        view: impl Into<ArrayViewMut<'a, T, D>>,
    ) -> Args<'a> {
        let view: ArrayViewMut<'a, T, D> = view.into();
        let shape = view.shape().to_vec();
        let strides = view.strides().to_vec();
        let it = match view.into_slice() {
            Some(data) => Item::Array {
                elem: T::TY,
                len: data.len(),
                ptr: data.as_mut_ptr() as *mut u8,
                shape,
                readonly: false,
            },
            None => Item::NonContiguous { shape, strides },
        };
        self.items.push((name.to_string(), it));
        self
    }
}

/// A compiled kernel: one entry function of a checked, JIT-compiled program.
///
/// `Send + Sync` and cheap to clone (the compiled code is shared); any number of threads may
/// [`call`](Self::call) one kernel at once, each with its own arguments.
#[derive(Clone)]
pub struct Kernel {
    prog: Arc<Program>,
    compiled: Arc<Compiled>,
    func: FuncId,
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Kernel>();
};

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("signature", &self.signature())
            .finish_non_exhaustive()
    }
}

/// Options for compiling a [`Kernel`]: `-D` overrides, a file name for diagnostics, and
/// [`Options`]. Made by [`Kernel::builder`].
#[derive(Clone, Debug)]
pub struct KernelBuilder<'s> {
    source: &'s str,
    entry: String,
    defines: BTreeMap<String, String>,
    file_name: String,
    opts: Options,
}

impl KernelBuilder<'_> {
    /// Overrides `#define name ...` with `value`, like `-D name=value` on the command line.
    pub fn define(mut self, name: &str, value: impl fmt::Display) -> Self {
        self.defines.insert(name.to_string(), value.to_string());
        self
    }
    /// Several [`define`](Self::define)s.
    pub fn defines<K: AsRef<str>, V: fmt::Display>(
        mut self,
        defs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        for (k, v) in defs {
            self = self.define(k.as_ref(), v);
        }
        self
    }
    /// The file name shown in diagnostics (default `<source>`).
    pub fn file_name(mut self, name: &str) -> Self {
        self.file_name = name.to_string();
        self
    }
    /// Compilation options (default [`Options::default`]).
    pub fn options(mut self, opts: &Options) -> Self {
        self.opts = *opts;
        self
    }
    /// Checks and compiles the program, or returns it from the process-wide cache (keyed by
    /// source text, overrides, options and host CPU; the entry is looked up afterwards, so
    /// every entry of one program shares its compiled code).
    pub fn compile(self) -> Result<Kernel, CompileError> {
        let (prog, compiled) =
            cached_program(self.source, &self.defines, &self.opts).map_err(|e| match e {
                CacheError::Frontend(ds) => self.frontend_error(ds),
                CacheError::Jit(e) => CompileError::Jit(e),
            })?;
        let func = self.entry_in(&prog)?;
        Ok(Kernel {
            prog,
            compiled,
            func,
        })
    }

    /// Runs the front end only (parse, `-D` overrides, type check; no code generation and
    /// no cache): the checked program and the entry's id, with the errors of
    /// [`compile`](Self::compile). For callers that transform the program before compiling
    /// it with [`Kernel::from_compiled`], or interpret it with [`interpret`].
    pub fn check(&self) -> Result<(Program, FuncId), CompileError> {
        let overrides: std::collections::HashMap<String, String> = self
            .defines
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let prog = tessera_sema::compile_source(self.source, &overrides)
            .map_err(|ds| self.frontend_error(ds))?;
        let func = self.entry_in(&prog)?;
        Ok((prog, func))
    }

    /// The compilation options set so far.
    pub fn compile_options(&self) -> &Options {
        &self.opts
    }

    /// The requested entry's name.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    fn frontend_error(&self, ds: Vec<tessera_syntax::Diagnostic>) -> CompileError {
        CompileError::Frontend {
            rendered: tessera_syntax::diag::render_all(
                &tessera_syntax::SourceFile::new(self.file_name.clone(), self.source),
                &ds,
            ),
            diagnostics: ds,
        }
    }

    fn entry_in(&self, prog: &Program) -> Result<FuncId, CompileError> {
        match prog.function(&self.entry) {
            Some((func, _)) => Ok(func),
            None => Err(CompileError::NoSuchFunction {
                entry: self.entry.clone(),
                file: self.file_name.clone(),
                available: prog.functions.iter().map(|f| f.name.clone()).collect(),
            }),
        }
    }
}

impl Kernel {
    /// Compiles `source` and selects the function `entry` (see [`KernelBuilder::compile`]
    /// for the cache). Front-end errors are rendered with the file name `<source>`.
    pub fn compile(source: &str, entry: &str, opts: &Options) -> Result<Kernel, CompileError> {
        Kernel::builder(source, entry).options(opts).compile()
    }

    /// A builder, for `-D` overrides and a file name:
    /// `Kernel::builder(src, "gemm").define("N", 100).file_name("gemm.c").compile()`.
    pub fn builder<'s>(source: &'s str, entry: &str) -> KernelBuilder<'s> {
        KernelBuilder {
            source,
            entry: entry.to_string(),
            defines: BTreeMap::new(),
            file_name: "<source>".to_string(),
            opts: Options::default(),
        }
    }

    /// The kernel for the function `entry` of a program compiled by [`Compiled::compile`]
    /// (for instance a program transformed after [`KernelBuilder::check`]); `None` if the
    /// program has no such function. Arguments are checked against the compiled program's
    /// declaration of `entry`.
    pub fn from_compiled(compiled: Arc<Compiled>, entry: &str) -> Option<Kernel> {
        let prog = compiled.prog.clone();
        let (func, _) = prog.function(entry)?;
        Some(Kernel {
            prog,
            compiled,
            func,
        })
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.prog.func(self.func).name
    }

    /// The entry's signature as C (`void gemm(int ni, ..., double C[ni][nj], ...)`).
    pub fn signature(&self) -> String {
        print::signature(&self.prog, self.prog.func(self.func))
    }

    /// The checked program.
    pub fn program(&self) -> &Arc<Program> {
        &self.prog
    }

    /// The entry's id in [`program`](Self::program).
    pub fn func_id(&self) -> FuncId {
        self.func
    }

    /// The compiled code, shared by every kernel compiled from the same source, overrides
    /// and options.
    pub fn compiled(&self) -> &Arc<Compiled> {
        &self.compiled
    }

    /// Checks `args` against the entry's parameters (see [`Args`] and the module
    /// documentation) and runs the compiled code on them; arrays are modified in place.
    /// Returns the entry's value (`None` for a `void` function).
    ///
    /// A kernel compiled without guards (`Options::guards == false`) is refused with
    /// [`CallError::Unguarded`]; see [`call_unchecked`](Self::call_unchecked).
    #[allow(clippy::result_large_err)] // RuntimeError is returned as is, on purpose
    pub fn call(&self, args: &mut Args<'_>) -> Result<Option<Scalar>, CallError> {
        if !self.compiled.options().guards {
            return Err(CallError::Unguarded {
                function: self.name().to_string(),
            });
        }
        // SAFETY: the code is guarded.
        unsafe { self.call_unchecked(args) }
    }

    /// [`call`](Self::call), also for a kernel compiled without guards. The arguments are
    /// checked all the same.
    ///
    /// # Safety
    /// If the kernel was compiled with `Options::guards == false`, the caller must ensure
    /// that the call performs no out-of-bounds array access, no integer division or
    /// remainder by zero and no shift by an invalid count: unguarded code does not check
    /// them, and they are undefined behaviour (memory corruption, a crash). With guards this
    /// is exactly [`call`](Self::call).
    #[allow(clippy::result_large_err)]
    pub unsafe fn call_unchecked(&self, args: &mut Args<'_>) -> Result<Option<Scalar>, CallError> {
        let raw = check(&self.prog, self.func, args, &self.compiled.written)?;
        // SAFETY: the pointers come from `&'a mut` borrows held by `args`, which outlives
        // this call, and their shapes were checked against the lengths by `check`;
        // unguarded code is this function's caller's obligation.
        Ok(unsafe { self.compiled.call_raw(self.func, &raw) }?)
    }
}

/// Checks `args` against the parameters of `func` (see [`Args`] and the module
/// documentation): one argument per parameter in parameter order, scalars converted to the
/// parameter's type, arrays of the parameter's element type whose slice length is the
/// product of their shape and whose shape is the declared one.
#[allow(clippy::result_large_err)]
fn check(
    prog: &Program,
    func: FuncId,
    args: &Args<'_>,
    written: &crate::Written,
) -> Result<Vec<RawArg>, CallError> {
    let f = prog.func(func);
    let decl = |i: usize| print::param(prog, f, f.params[i]);
    let names: Vec<&str> = f.params.iter().map(|p| f.var(*p).name.as_str()).collect();
    let mut slot: Vec<Option<&Item>> = vec![None; names.len()];
    for (n, it) in &args.items {
        let Some(i) = names.iter().position(|p| p == n) else {
            return Err(CallError::Unknown {
                arg: n.clone(),
                function: f.name.clone(),
                params: names.iter().map(|s| s.to_string()).collect(),
            });
        };
        if slot[i].is_some() {
            return Err(CallError::Duplicate { arg: n.clone() });
        }
        slot[i] = Some(it);
    }
    // Kinds, types, scalar conversions, slice lengths.
    let mut scalars: Vec<Option<Scalar>> = vec![None; names.len()];
    for (i, it) in slot.iter().enumerate() {
        let arg = || names[i].to_string();
        let Some(it) = it else {
            return Err(CallError::Missing {
                arg: arg(),
                function: f.name.clone(),
                expected: decl(i),
            });
        };
        match (&f.var(f.params[i]).kind, it) {
            (VarKind::Scalar(t), Item::Scalar(s)) => {
                scalars[i] = Some(checked_convert(*s, *t).ok_or(CallError::ScalarType {
                    arg: arg(),
                    expected: *t,
                    given: *s,
                })?);
            }
            (VarKind::Scalar(_), Item::BadScalar(v)) => {
                return Err(CallError::ScalarRange {
                    arg: arg(),
                    given: *v,
                })
            }
            (VarKind::Scalar(_), Item::Array { elem, shape, .. }) => {
                return Err(CallError::Kind {
                    arg: arg(),
                    expected: decl(i),
                    given: format!("an array of `{elem}` with shape {}", shape_list(shape)),
                })
            }
            (VarKind::Scalar(_), Item::NonContiguous { shape, .. }) => {
                return Err(CallError::Kind {
                    arg: arg(),
                    expected: decl(i),
                    given: format!("an array with shape {}", shape_list(shape)),
                })
            }
            (VarKind::Array { .. }, Item::Scalar(s)) => {
                return Err(CallError::Kind {
                    arg: arg(),
                    expected: decl(i),
                    given: format!("the scalar {}", scalar_desc(s)),
                })
            }
            (VarKind::Array { .. }, Item::BadScalar(v)) => {
                return Err(CallError::Kind {
                    arg: arg(),
                    expected: decl(i),
                    given: format!("the scalar `{v}`"),
                })
            }
            (
                VarKind::Array { elem: pe, .. },
                Item::Array {
                    elem,
                    ptr: _,
                    len,
                    shape,
                    readonly,
                },
            ) => {
                if *readonly
                    && written.get_or_init(|| tessera_ir::alias::written_arrays(prog))
                        [func.0 as usize]
                        .contains(&f.params[i])
                {
                    return Err(CallError::ReadOnly {
                        arg: arg(),
                        function: f.name.clone(),
                    });
                }
                if elem != pe {
                    return Err(CallError::ElemType {
                        arg: arg(),
                        expected: *pe,
                        given: *elem,
                    });
                }
                let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
                if n != Some(*len) {
                    return Err(CallError::Length {
                        arg: arg(),
                        shape: shape.clone(),
                        len: *len,
                    });
                }
            }
            (VarKind::Array { .. }, Item::NonContiguous { shape, strides }) => {
                return Err(CallError::NotContiguous {
                    arg: arg(),
                    shape: shape.clone(),
                    strides: strides.clone(),
                })
            }
        }
    }
    // Shapes against the declared extents.
    let declared = tessera_interp::declared_shapes(prog, func, &scalars)?;
    let mut raw = Vec::with_capacity(names.len());
    for (i, it) in slot.iter().enumerate() {
        match (it, &declared[i]) {
            (
                Some(Item::Array {
                    elem, ptr, shape, ..
                }),
                Some(want),
            ) => {
                let same = want.len() == shape.len()
                    && want
                        .iter()
                        .zip(shape)
                        .all(|(&w, &g)| w >= 0 && w as u64 == g as u64);
                if !same {
                    return Err(CallError::Shape {
                        arg: names[i].to_string(),
                        decl: decl(i),
                        expected: want.clone(),
                        given: shape.clone(),
                    });
                }
                raw.push(RawArg::Array {
                    elem: *elem,
                    ptr: *ptr,
                    shape: shape.clone(),
                });
            }
            _ => raw.push(RawArg::Scalar(scalars[i].expect("checked above"))),
        }
    }
    Ok(raw)
}

/// Runs entry `func` of `prog` in the reference interpreter (`tessera_interp::call` with
/// `limits`), with the arguments of a [`Kernel::call`], checked the same way and reporting
/// the same [`CallError`]s. The interpreter works on its own arrays: each array argument is
/// copied in before the call and copied back after it (also when the call fails, so the
/// caller sees the writes made before the error, as with compiled code).
///
/// ```
/// use std::collections::HashMap;
/// use tessera_jit::{interpret, Args, Limits};
///
/// let prog = tessera_sema::compile_source(
///     "void inc(int n, double x[n]) { for (int i = 0; i < n; i++) x[i] += 1; }",
///     &HashMap::new(),
/// )
/// .unwrap();
/// let (inc, _) = prog.function("inc").unwrap();
/// let mut x = vec![1.0, 2.0];
/// interpret(&prog, inc, &mut Args::new().scalar("n", 2).array("x", &mut x, &[2]), Limits::default()).unwrap();
/// assert_eq!(x, [2.0, 3.0]);
/// ```
#[allow(clippy::result_large_err)]
pub fn interpret(
    prog: &Program,
    func: FuncId,
    args: &mut Args<'_>,
    limits: tessera_interp::Limits,
) -> Result<Option<Scalar>, CallError> {
    let raw = check(prog, func, args, &crate::Written::new())?;
    let mut vals: Vec<ArgValue> = raw
        .iter()
        .map(|a| match a {
            RawArg::Scalar(s) => ArgValue::Scalar(*s),
            // SAFETY: `check` verified that `ptr` holds the product of `shape` elements of
            // type `elem` (it comes from a `&'a mut [T]` held by `args`).
            RawArg::Array { elem, ptr, shape } => {
                ArgValue::Array(unsafe { copy_in(*elem, *ptr, shape) })
            }
        })
        .collect();
    let r = tessera_interp::call(prog, func, &mut vals, limits);
    let readonly = readonly_params(prog, func, args);
    for ((a, v), ro) in raw.iter().zip(&vals).zip(readonly) {
        if ro {
            // Never written through (the call refused a parameter the function may write).
            continue;
        }
        if let (RawArg::Array { ptr, .. }, ArgValue::Array(d)) = (a, v) {
            // SAFETY: as above; `d` has the element type and length of the argument (the
            // interpreter does not change an array's shape).
            unsafe { copy_out(&d.elems, *ptr) };
        }
    }
    Ok(r?)
}

/// Per parameter of `func`, in order: whether its argument was passed read-only.
fn readonly_params(prog: &Program, func: FuncId, args: &Args<'_>) -> Vec<bool> {
    let f = prog.func(func);
    f.params
        .iter()
        .map(|p| {
            let name = &f.var(*p).name;
            args.items
                .iter()
                .any(|(n, it)| n == name && matches!(it, Item::Array { readonly: true, .. }))
        })
        .collect()
}

/// A copy of the array at `ptr`.
///
/// # Safety
/// `ptr` is valid for reads of the product of `shape` elements of type `elem`.
unsafe fn copy_in(elem: ScalarTy, ptr: *mut u8, shape: &[usize]) -> ArrayData {
    let n: usize = shape.iter().product();
    // SAFETY: per the contract (and `ptr` is aligned and non-null: it came from a slice).
    let elems = unsafe {
        match elem {
            ScalarTy::Bool => {
                ArrayElems::Bool(std::slice::from_raw_parts(ptr as *const bool, n).to_vec())
            }
            ScalarTy::I8 => {
                ArrayElems::I8(std::slice::from_raw_parts(ptr as *const i8, n).to_vec())
            }
            ScalarTy::I32 => {
                ArrayElems::I32(std::slice::from_raw_parts(ptr as *const i32, n).to_vec())
            }
            ScalarTy::I64 => {
                ArrayElems::I64(std::slice::from_raw_parts(ptr as *const i64, n).to_vec())
            }
            ScalarTy::F32 => {
                ArrayElems::F32(std::slice::from_raw_parts(ptr as *const f32, n).to_vec())
            }
            ScalarTy::F64 => {
                ArrayElems::F64(std::slice::from_raw_parts(ptr as *const f64, n).to_vec())
            }
        }
    };
    ArrayData {
        shape: shape.to_vec(),
        elems,
    }
}

/// Writes `elems` to `ptr`.
///
/// # Safety
/// `ptr` is valid for writes of `elems.len()` elements of `elems`'s type.
unsafe fn copy_out(elems: &ArrayElems, ptr: *mut u8) {
    // SAFETY: per the contract.
    unsafe {
        match elems {
            ArrayElems::Bool(v) => {
                std::ptr::copy_nonoverlapping(v.as_ptr(), ptr as *mut bool, v.len())
            }
            ArrayElems::I8(v) => std::ptr::copy_nonoverlapping(v.as_ptr(), ptr as *mut i8, v.len()),
            ArrayElems::I32(v) => {
                std::ptr::copy_nonoverlapping(v.as_ptr(), ptr as *mut i32, v.len())
            }
            ArrayElems::I64(v) => {
                std::ptr::copy_nonoverlapping(v.as_ptr(), ptr as *mut i64, v.len())
            }
            ArrayElems::F32(v) => {
                std::ptr::copy_nonoverlapping(v.as_ptr(), ptr as *mut f32, v.len())
            }
            ArrayElems::F64(v) => {
                std::ptr::copy_nonoverlapping(v.as_ptr(), ptr as *mut f64, v.len())
            }
        }
    }
}

/// `s` as a value of type `t`, if the conversion is allowed (see [`Args::scalar`]).
fn checked_convert(s: Scalar, t: ScalarTy) -> Option<Scalar> {
    use Scalar as S;
    use ScalarTy as T;
    let exact_f64 = |v: i64| (v as f64) as i128 == v as i128;
    let exact_f32 = |v: i64| (v as f32) as i128 == v as i128;
    Some(match (t, s) {
        (T::Bool, S::Bool(b)) => S::Bool(b),
        (T::I8, S::I8(v)) => S::I8(v),
        (T::I8, S::I32(v)) => S::I8(i8::try_from(v).ok()?),
        (T::I8, S::I64(v)) => S::I8(i8::try_from(v).ok()?),
        (T::I32, S::I8(v)) => S::I32(v as i32),
        (T::I64, S::I8(v)) => S::I64(v as i64),
        (T::F32, S::I8(v)) => S::F32(v as f32),
        (T::F64, S::I8(v)) => S::F64(v as f64),
        (T::I32, S::I32(v)) => S::I32(v),
        (T::I32, S::I64(v)) => S::I32(i32::try_from(v).ok()?),
        (T::I64, S::I32(v)) => S::I64(v as i64),
        (T::I64, S::I64(v)) => S::I64(v),
        (T::F32, S::F32(v)) => S::F32(v),
        (T::F32, S::F64(v)) => S::F32(v as f32),
        (T::F32, S::I32(v)) if exact_f32(v as i64) => S::F32(v as f32),
        (T::F32, S::I64(v)) if exact_f32(v) => S::F32(v as f32),
        (T::F64, S::F64(v)) => S::F64(v),
        (T::F64, S::F32(v)) => S::F64(v as f64),
        (T::F64, S::I32(v)) => S::F64(v as f64),
        (T::F64, S::I64(v)) if exact_f64(v) => S::F64(v as f64),
        _ => return None,
    })
}
