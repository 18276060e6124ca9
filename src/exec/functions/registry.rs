//! The function registry: every scalar function weir knows, with its
//! aliases, signatures (argument types and result type), strictness,
//! volatility and vectorized implementation; aggregates by name.
//!
//! The binder resolves a call here (PostgreSQL's rules, simplified: exact
//! matches first, then implicit casts, unknown literals take the preferred
//! type of their category) and coerces the arguments to the chosen
//! signature; the executor calls the implementation through `invoke`.
//! An unknown name or argument list is 42883 with PostgreSQL's text.
//!
//! May import `types`, `error` and `exec`'s expression types; nothing above
//! `exec`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow::array::*;
use arrow::datatypes::*;

use crate::error::{Result, WeirError};
use crate::exec::ExecCtx;
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// How a function's result may change for the same arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Volatility {
    /// Same arguments, same result, always (`abs`, `lower`, `date_trunc`).
    Immutable,
    /// One value for the whole statement (`now()`, `current_setting`).
    Stable,
    /// May change on every call (`random()`, `clock_timestamp()`).
    Volatile,
}

/// One argument slot of a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    T(SqlType),
    /// Any type, passed as it is (an unknown literal becomes text).
    Any,
}

#[derive(Debug, Clone)]
pub struct Signature {
    pub args: Vec<Arg>,
    /// Further arguments of this kind (VARIADIC).
    pub variadic: Option<Arg>,
    pub ret: SqlType,
}

/// A vectorized implementation: arguments already coerced to the chosen
/// signature; returns an array of `args.n` rows of the result type.
pub type VectorFn = fn(&Args<'_>) -> Result<ArrayRef>;

#[derive(Clone, Copy)]
pub enum Impl {
    Vector(VectorFn),
    /// Evaluated by the expression evaluator itself (lazy: `coalesce`),
    /// or rewritten by the binder.
    Special,
}

pub struct FuncDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub sigs: Vec<Signature>,
    /// NULL in any argument gives NULL without calling the implementation.
    pub strict: bool,
    pub volatility: Volatility,
    pub imp: Impl,
}

/// The evaluated arguments of one call. A constant argument is a one-row
/// array (`scalar[j]`), read once instead of per row.
pub struct Args<'a> {
    pub cols: Vec<ArrayRef>,
    pub scalar: Vec<bool>,
    pub types: Vec<SqlType>,
    /// Rows to produce.
    pub n: usize,
    pub ret: SqlType,
    pub ctx: &'a ExecCtx,
    /// The function's canonical name.
    pub name: &'static str,
}

/// Read access to a primitive argument, column or constant.
pub struct Prim<'a, T: ArrowPrimitiveType> {
    arr: &'a PrimitiveArray<T>,
    scalar: bool,
}

impl<T: ArrowPrimitiveType> Prim<'_, T> {
    #[inline]
    pub fn get(&self, i: usize) -> Option<T::Native> {
        let i = if self.scalar { 0 } else { i };
        if self.arr.is_null(i) {
            None
        } else {
            Some(self.arr.value(i))
        }
    }
    /// The constant's value when the argument is a constant.
    pub fn constant(&self) -> Option<Option<T::Native>> {
        self.scalar.then(|| self.get(0))
    }
    pub fn array(&self) -> Option<&PrimitiveArray<T>> {
        (!self.scalar).then_some(self.arr)
    }
    /// The underlying array, column or one-row constant.
    pub fn array_any(&self) -> &PrimitiveArray<T> {
        self.arr
    }
}

/// Read access to a text argument, column or constant.
pub struct Str<'a> {
    arr: &'a StringArray,
    scalar: bool,
}

impl<'a> Str<'a> {
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a str> {
        let i = if self.scalar { 0 } else { i };
        if self.arr.is_null(i) {
            None
        } else {
            Some(self.arr.value(i))
        }
    }
    pub fn constant(&self) -> Option<Option<&'a str>> {
        self.scalar.then(|| self.get(0))
    }
}

impl<'a> Args<'a> {
    pub fn len(&self) -> usize {
        self.cols.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }
    pub fn prim<T: ArrowPrimitiveType>(&self, j: usize) -> Result<Prim<'_, T>> {
        let arr = self.cols[j]
            .as_primitive_opt::<T>()
            .ok_or_else(|| err!(Internal, "argument {} is {}, not {}", j + 1, self.cols[j].data_type(), T::DATA_TYPE))?;
        Ok(Prim { arr, scalar: self.scalar[j] })
    }
    pub fn f64(&self, j: usize) -> Result<Prim<'_, Float64Type>> {
        self.prim::<Float64Type>(j)
    }
    pub fn i64(&self, j: usize) -> Result<Prim<'_, Int64Type>> {
        self.prim::<Int64Type>(j)
    }
    pub fn str(&self, j: usize) -> Result<Str<'_>> {
        let arr = self.cols[j]
            .as_string_opt::<i32>()
            .ok_or_else(|| err!(Internal, "argument {} is {}, not text", j + 1, self.cols[j].data_type()))?;
        Ok(Str { arr, scalar: self.scalar[j] })
    }
    /// Argument `j` as a value at row `i` (the long tail; boxes).
    pub fn value(&self, j: usize, i: usize) -> Value {
        let i = if self.scalar[j] { 0 } else { i };
        crate::types::value_at(self.cols[j].as_ref(), i)
    }
}

pub struct Registry {
    funcs: Vec<FuncDef>,
    by_name: HashMap<&'static str, usize>,
    aggregates: &'static [&'static str],
}

/// Aggregate function names (their signatures live with the aggregate
/// states in `exec::aggregate`).
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "bool_and",
    "every",
    "bool_or",
    "string_agg",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "regr_count",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
    "regr_avgx",
    "regr_avgy",
    "regr_r2",
    "regr_slope",
    "regr_intercept",
    "covar_pop",
    "covar_samp",
    "corr",
    "percentile_cont",
    "percentile_disc",
    "mode",
];

/// The process-wide registry.
pub fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry::new(super::builtins()))
}

/// A call resolved against a signature.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The function's canonical name (aliases resolved).
    pub name: &'static str,
    /// The type each argument is coerced to (`None`: left as it is).
    pub params: Vec<Option<SqlType>>,
    pub ret: SqlType,
}

/// The name PostgreSQL prints for an argument type in "does not exist".
fn arg_type_name(t: SqlType) -> &'static str {
    if t == SqlType::Unknown {
        "unknown"
    } else {
        t.pg_name()
    }
}

/// PostgreSQL's 42883 for a call that matches no function.
pub fn no_such_function(name: &str, types: &[SqlType]) -> WeirError {
    let sig = types.iter().map(|t| arg_type_name(*t)).collect::<Vec<_>>().join(", ");
    err!(UndefinedFunction, "function {name}({sig}) does not exist")
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

/// Cost of an implicit coercion `from → to` (PostgreSQL's implicit casts),
/// or None when there is none.
fn coercion_cost(from: SqlType, to: Arg) -> Option<u32> {
    use SqlType::*;
    let to = match to {
        Arg::Any => return Some(0),
        Arg::T(t) => t,
    };
    if from == to {
        return Some(0);
    }
    Some(match (from, to) {
        (Unknown, _) => 1,
        (Varchar, Text) | (Text, Varchar) => 1,
        (Int2, Int4) | (Int4, Int8) | (Float4, Float8) => 2,
        (Int2, Int8) => 3,
        // oid: to bigint implicitly, from the smaller integers (PostgreSQL's casts).
        (Oid, Int8) => 2,
        (Int2 | Int4, Oid) => 2,
        (Oid, Float8) => 4,
        // numeric: from the integers, and on to the floats.
        (Int2 | Int4 | Int8, Numeric) => 3,
        (Numeric, Float8) => 4,
        (Numeric, Float4) => 5,
        (Int2 | Int4 | Int8, Float8) => 4,
        (Int2 | Int4 | Int8, Float4) => 5,
        (Date, Timestamp) | (Timestamp, TimestampTz) => 2,
        (Date, TimestampTz) => 3,
        _ => return None,
    })
}

/// Cost of an implicit coercion `from → to` for a user-defined function's
/// argument (the registry's own rules), and whether `to` is its category's
/// preferred type; None when there is no implicit cast.
pub fn implicit_coercion(from: SqlType, to: SqlType) -> Option<(u32, bool)> {
    coercion_cost(from, Arg::T(to)).map(|c| (c, preferred(Arg::T(to))))
}

/// PostgreSQL's preferred type of a category, for unknown literals.
fn preferred(t: Arg) -> bool {
    matches!(t, Arg::T(SqlType::Float8 | SqlType::Text | SqlType::TimestampTz | SqlType::Interval | SqlType::Bool) | Arg::Any)
}

impl Registry {
    fn new(funcs: Vec<FuncDef>) -> Registry {
        let mut by_name = HashMap::new();
        for (i, f) in funcs.iter().enumerate() {
            for n in std::iter::once(&f.name).chain(f.aliases.iter()) {
                let prev = by_name.insert(*n, i);
                assert!(prev.is_none(), "function {n} registered twice");
            }
        }
        Registry { funcs, by_name, aggregates: AGGREGATES }
    }

    pub fn lookup(&self, name: &str) -> Option<&FuncDef> {
        self.by_name.get(name).map(|&i| &self.funcs[i])
    }

    pub fn is_aggregate(&self, name: &str) -> bool {
        self.aggregates.contains(&name)
    }

    /// Whether a name is a known scalar function or aggregate.
    pub fn exists(&self, name: &str) -> bool {
        self.lookup(name).is_some() || self.is_aggregate(name)
    }

    /// The volatility of a function (aggregates are immutable); None if
    /// the name is unknown.
    pub fn volatility(&self, name: &str) -> Option<Volatility> {
        if self.is_aggregate(name) {
            return Some(Volatility::Immutable);
        }
        self.lookup(name).map(|f| f.volatility)
    }

    /// Whether NULL in gives NULL out; None if the name is unknown.
    pub fn is_strict(&self, name: &str) -> Option<bool> {
        self.lookup(name).map(|f| f.strict)
    }

    /// Pick the signature for a call with these argument types.
    pub fn resolve(&self, name: &str, types: &[SqlType]) -> Result<Resolved> {
        let f = self.lookup(name).ok_or_else(|| no_such_function(name, types))?;
        // PostgreSQL's func_select_candidate, simplified: among the
        // signatures every argument can be coerced to, most exact matches
        // win, then most coercions to a preferred type (float8, text,
        // timestamptz, interval, boolean), then the first declared.
        let mut best: Option<(u32, u32, &Signature)> = None;
        for sig in &f.sigs {
            let fixed = sig.args.len();
            if types.len() < fixed || (types.len() > fixed && sig.variadic.is_none()) {
                continue;
            }
            let mut exact = 0u32;
            let mut pref = 0u32;
            let mut ok = true;
            for (k, t) in types.iter().enumerate() {
                let want = if k < fixed { sig.args[k] } else { sig.variadic.expect("extra arguments only match a variadic signature") };
                match coercion_cost(*t, want) {
                    Some(0) => exact += 1,
                    Some(_) => {
                        if preferred(want) {
                            pref += 1;
                        }
                    }
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            let better = match best {
                None => true,
                Some((e, p, _)) => (exact, pref) > (e, p),
            };
            if better {
                best = Some((exact, pref, sig));
            }
        }
        let Some((_, _, sig)) = best else { return Err(no_such_function(name, types)) };
        let params = types
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let want =
                    if k < sig.args.len() { sig.args[k] } else { sig.variadic.expect("extra arguments only match a variadic signature") };
                match want {
                    Arg::T(w) => Some(w),
                    Arg::Any if *t == SqlType::Unknown => Some(SqlType::Text),
                    Arg::Any => None,
                }
            })
            .collect();
        Ok(Resolved { name: f.name, params, ret: sig.ret })
    }
}

/// Call a function over evaluated arguments. `scalar[j]` marks one-row
/// constant arguments. Strict functions short-cut constant NULLs; when all
/// arguments are constant the function runs once and is broadcast.
pub fn invoke(
    name: &str,
    cols: Vec<ArrayRef>,
    scalar: Vec<bool>,
    types: Vec<SqlType>,
    ret: SqlType,
    n: usize,
    ctx: &ExecCtx,
) -> Result<ArrayRef> {
    let f = registry().lookup(name).ok_or_else(|| no_such_function(name, &types))?;
    let Impl::Vector(imp) = f.imp else { bail!(Internal, "function {name} has no vectorized implementation") };
    if f.strict && cols.iter().zip(&scalar).any(|(c, s)| *s && c.is_null(0)) {
        return Ok(new_null_array(&ret.to_arrow(), n));
    }
    // All-constant calls of non-volatile functions run once.
    let once = !cols.is_empty() && scalar.iter().all(|s| *s) && f.volatility != Volatility::Volatile && n != 1;
    let rows = if once { 1 } else { n };
    let args = Args { cols, scalar, types, n: rows, ret, ctx, name: f.name };
    let out = imp(&args)?;
    if out.len() != rows {
        bail!(Internal, "function {name} returned {} rows for {rows}", out.len());
    }
    let out = if out.data_type() != &ret.to_arrow() && ret != SqlType::Unknown {
        crate::exec::expr::cast_array(&out, SqlType::from_arrow(out.data_type()), ret)?
    } else {
        out
    };
    if once {
        let idx = UInt32Array::from(vec![0u32; n]);
        return Ok(arrow::compute::take(&out, &idx, None)?);
    }
    Ok(out)
}

/// Broadcast helper: a one-row result as an array.
pub fn one(v: Value, ty: SqlType) -> Result<ArrayRef> {
    crate::types::values_to_array(&[v], ty)
}

/// Row-at-a-time fallback for the long tail (catalog functions): boxes
/// each argument as a `Value`. Strictness is honoured per row.
pub fn rowwise(args: &Args<'_>, strict: bool, f: impl Fn(&[Value], &ExecCtx) -> Result<Value>) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(args.n);
    let mut row = Vec::with_capacity(args.len());
    for i in 0..args.n {
        row.clear();
        row.extend((0..args.len()).map(|j| args.value(j, i)));
        if strict && row.iter().any(|v| v.is_null()) {
            out.push(Value::Null);
        } else {
            out.push(f(&row, args.ctx)?);
        }
    }
    crate::types::values_to_array(&out, args.ret)
}

pub fn arc(a: impl Array + 'static) -> ArrayRef {
    Arc::new(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use SqlType::*;

    #[test]
    fn unknown_names_and_arguments_are_42883() {
        let r = registry();
        let e = r.resolve("sqrt", &[]).unwrap_err();
        assert_eq!(e.kind.sqlstate(), "42883");
        assert_eq!(e.message, "function sqrt() does not exist");
        assert_eq!(
            e.hint.as_deref(),
            Some("No function matches the given name and argument types. You might need to add explicit type casts.")
        );
        assert_eq!(r.resolve("repeat", &[Unknown]).unwrap_err().message, "function repeat(unknown) does not exist");
        assert_eq!(r.resolve("length", &[Int4]).unwrap_err().message, "function length(integer) does not exist");
        assert_eq!(r.resolve("nope", &[Int8, Text]).unwrap_err().message, "function nope(bigint, text) does not exist");
    }

    #[test]
    fn resolution_prefers_exact_then_preferred_types() {
        let r = registry();
        // abs(int4) stays int4; abs('-5') takes float8, the numeric preferred type.
        assert_eq!(r.resolve("abs", &[Int4]).unwrap().ret, Int4);
        let u = r.resolve("abs", &[Unknown]).unwrap();
        assert_eq!((u.ret, u.params.clone()), (Float8, vec![Some(Float8)]));
        // Implicit casts: int4 → float8 for sqrt, date → timestamptz for date_trunc.
        assert_eq!(r.resolve("sqrt", &[Int4]).unwrap().params, vec![Some(Float8)]);
        assert_eq!(r.resolve("date_trunc", &[Unknown, Timestamp]).unwrap().ret, Timestamp);
        assert_eq!(r.resolve("date_trunc", &[Unknown, Date]).unwrap().ret, TimestampTz);
        assert_eq!(r.resolve("date_trunc", &[Text, Interval]).unwrap().ret, Interval);
        // No implicit cast from float to integer or from numbers to text.
        assert!(r.resolve("repeat", &[Text, Float8]).is_err());
        assert!(r.resolve("lower", &[Int4]).is_err());
        // Variadic any.
        assert_eq!(r.resolve("concat", &[Int4, Unknown, Bool]).unwrap().params, vec![None, Some(Text), None]);
    }

    #[test]
    fn aliases_resolve_to_the_canonical_name() {
        let r = registry();
        assert_eq!(r.resolve("ceiling", &[Float8]).unwrap().name, "ceil");
        assert_eq!(r.resolve("char_length", &[Text]).unwrap().name, "length");
        assert_eq!(r.resolve("pow", &[Float8, Float8]).unwrap().name, "power");
        assert_eq!(r.resolve("transaction_timestamp", &[]).unwrap().name, "now");
    }

    #[test]
    fn volatility_and_strictness() {
        let r = registry();
        assert_eq!(r.volatility("now"), Some(Volatility::Stable));
        assert_eq!(r.volatility("current_timestamp"), Some(Volatility::Stable));
        assert_eq!(r.volatility("random"), Some(Volatility::Volatile));
        assert_eq!(r.volatility("clock_timestamp"), Some(Volatility::Volatile));
        assert_eq!(r.volatility("date_trunc"), Some(Volatility::Immutable));
        assert_eq!(r.volatility("sum"), Some(Volatility::Immutable));
        assert_eq!(r.volatility("no_such"), None);
        assert_eq!(r.is_strict("lower"), Some(true));
        assert_eq!(r.is_strict("concat"), Some(false));
        assert_eq!(r.is_strict("coalesce"), Some(false));
        assert!(r.is_aggregate("count") && !r.is_aggregate("lower"));
        assert!(r.exists("avg") && r.exists("upper") && !r.exists("frobnicate"));
    }

    #[test]
    fn every_function_has_a_signature() {
        for f in &registry().funcs {
            assert!(!f.sigs.is_empty(), "{} has no signature", f.name);
        }
    }
}
