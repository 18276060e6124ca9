//! Binding of the array functions whose result type follows their
//! arguments (PostgreSQL's `anyarray` / `anyelement`): `array_append`,
//! `array_prepend`, `array_cat`, `array_remove`, `array_replace`, and the
//! `||` operator when an operand is an array (array || array is
//! `array_cat`, array || element `array_append`, element || array
//! `array_prepend`; an untyped operand is an array, as in PostgreSQL).
//!
//! Part of the binder; the calls evaluate in `exec::functions::array`.

use super::bind::coerce;
use super::Planner;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::types::SqlType;
use crate::{bail, err};

/// The functions bound here.
pub const ARRAY_FNS: [&str; 5] = ["array_append", "array_prepend", "array_cat", "array_remove", "array_replace"];

fn no_operator(l: SqlType, r: SqlType) -> crate::error::WeirError {
    err!(UndefinedFunction, "operator does not exist: {l} || {r}")
        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

impl Planner<'_> {
    /// `l || r` where one side is an array.
    pub(super) fn bind_array_concat(&self, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        let name = match (lt.is_array(), rt.is_array()) {
            (true, true) => "array_cat",
            (true, false) if rt == SqlType::Unknown => "array_cat",
            (false, true) if lt == SqlType::Unknown => "array_cat",
            (true, false) => "array_append",
            (false, true) => "array_prepend",
            (false, false) => return Err(no_operator(lt, rt)),
        };
        self.bind_array_fn(name, vec![l, r]).map_err(|e| {
            if e.kind == crate::error::ErrorKind::UndefinedFunction {
                no_operator(lt, rt)
            } else {
                e
            }
        })
    }

    /// One of `ARRAY_FNS` over bound arguments.
    pub(super) fn bind_array_fn(&self, name: &str, mut args: Vec<Expr>) -> Result<Expr> {
        let types: Vec<SqlType> = args.iter().map(|a| a.ty()).collect();
        let no_fn = || crate::exec::functions::registry::no_such_function(name, &types);
        // Which arguments are arrays (the rest are elements).
        let arrays: &[bool] = match (name, args.len()) {
            ("array_append", 2) | ("array_remove", 2) => &[true, false],
            ("array_prepend", 2) => &[false, true],
            ("array_cat", 2) => &[true, true],
            ("array_replace", 3) => &[true, false, false],
            _ => return Err(no_fn()),
        };
        // The element type: from the typed arrays, else from the typed elements.
        let mut elem: Option<SqlType> = None;
        for (t, is_arr) in types.iter().zip(arrays) {
            let e = match (is_arr, t) {
                (true, SqlType::Array(e)) => e.ty(),
                (_, SqlType::Unknown) => continue,
                (true, _) => return Err(no_fn()),
                (false, t) if t.is_array() => return Err(no_fn()),
                (false, t) => *t,
            };
            elem = Some(match elem {
                None => e,
                Some(prev) if prev == e => e,
                // Arrays must agree exactly; an element adapts to the array.
                Some(prev) if *is_arr => SqlType::common(prev, e).filter(|c| c.array_of().is_some()).ok_or_else(no_fn)?,
                Some(prev) => prev,
            });
        }
        let Some(elem) = elem else {
            bail!(DatatypeMismatch, "could not determine polymorphic type because input has type unknown");
        };
        let Some(aty) = elem.array_of() else { return Err(no_fn()) };
        for (a, is_arr) in args.iter_mut().zip(arrays) {
            let want = if *is_arr { aty } else { elem };
            self.infer_param(a, want);
            *a = coerce(a.clone(), want)?;
        }
        Ok(Expr::Func { name: name.to_string(), args, ty: aty })
    }
}
