//! Calls of user-defined aggregates (`CREATE AGGREGATE`; definitions in
//! `catalog/function.rs`, the statement in `sql/aggregate.rs`).
//!
//! A call picks one of its name's aggregate overloads as a function call
//! does (`function.rs`: polymorphic `anyelement` arguments specialized to
//! the call's type), then binds each support function's body over a
//! one-row batch of (state, arguments…) columns: transition, final, and for
//! a window call whose frame head can move, the moving-aggregate forward
//! and inverse functions. The bodies must be one expression (SQL functions
//! PostgreSQL would inline, `BEGIN RETURN expr; END`). The bound aggregate
//! is registered with exec's `user_agg` and the call carries its number.
//!
//! Lives in the planner; reads the catalog.

use sqlparser::ast;

use super::bind::AggCollector;
use super::{coerce, Planner, Scope};
use crate::catalog::FunctionDef;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::{AggCall, AggFunc, FrameBound, WindowFrame};
use crate::exec::user_agg::{register, Moving, Transition, UserAgg};
use crate::types::{value_at, SqlType, Value};
use crate::{bail, err};

impl<'a> Planner<'a> {
    /// A call of a user-defined aggregate (no OVER): an aggregate of its
    /// query level, like a built-in one.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bind_user_aggregate(
        &self,
        name: &str,
        defs: Vec<FunctionDef>,
        args: &[ast::Expr],
        star: bool,
        distinct: bool,
        ordered: bool,
        filter: Option<&ast::Expr>,
        scope: &Scope,
        agg: Option<&AggCollector>,
    ) -> Result<Expr> {
        if agg.is_none() {
            bail!(Grouping, "aggregate functions are not allowed here");
        }
        if ordered {
            bail!(FeatureNotSupported, "ORDER BY in a call of a user-defined aggregate is not supported");
        }
        if star && !args.is_empty() {
            bail!(Syntax, "syntax error at or near \"*\"");
        }
        // Arguments of an aggregate may not contain aggregates.
        let bound: Vec<Expr> = args.iter().map(|a| self.bind_expr(a, scope, None)).collect::<Result<_>>()?;
        super::srf::refuse_in_call(&bound, "aggregate")?;
        let (agg, args) = self.bound_user_aggregate(name, defs, bound, false)?;
        let filter = filter.map(|x| self.bind_expr(x, scope, None).and_then(|e| coerce(e, SqlType::Bool))).transpose()?;
        let ty = agg.ty;
        Ok(Expr::Agg(Box::new(AggCall { func: AggFunc::User(register(agg)), args, distinct, filter, ty })))
    }

    /// A user-defined aggregate called with OVER: its function, arguments
    /// (the FILTER condition after them) and type. Moving-aggregate mode as
    /// PostgreSQL chooses it: the aggregate has an inverse, the frame's head
    /// can move, and no argument or filter is volatile.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bind_user_window_aggregate(
        &self,
        name: &str,
        defs: Vec<FunctionDef>,
        bound: Vec<Expr>,
        filter: Option<&ast::Expr>,
        frame: &WindowFrame,
        scope: &Scope,
        collector: &AggCollector,
    ) -> Result<(AggFunc, Vec<Expr>, SqlType)> {
        let filter = filter.map(|x| self.bind_expr(x, scope, Some(collector)).and_then(|e| coerce(e, SqlType::Bool))).transpose()?;
        let head_moves = match frame {
            WindowFrame::Default | WindowFrame::RowsPreceding(None) => false,
            WindowFrame::RowsPreceding(Some(_)) => true,
            WindowFrame::General(g) => !matches!(g.start, FrameBound::UnboundedPreceding),
        };
        let volatile = bound.iter().chain(filter.as_ref()).any(is_volatile);
        let (agg, mut args) = self.bound_user_aggregate(name, defs, bound, head_moves && !volatile)?;
        args.extend(filter);
        let ty = agg.ty;
        Ok((AggFunc::User(register(agg)), args, ty))
    }

    /// The overload a call means, its support functions bound, and the
    /// call's arguments coerced to its parameter types.
    fn bound_user_aggregate(&self, name: &str, defs: Vec<FunctionDef>, bound: Vec<Expr>, moving: bool) -> Result<(UserAgg, Vec<Expr>)> {
        let names = vec![None; bound.len()];
        let (def, args) = self.resolve_user_function(name, defs, bound, &names)?;
        let spec = def.aggregate.clone().ok_or_else(|| err!(Internal, "{} is not an aggregate", def.signature()))?;
        let arg_types: Vec<SqlType> = args.iter().map(|a| a.ty()).collect();
        let db = def.database.as_str();
        let plain = self.transition(db, &spec.sfunc, spec.stype, spec.initcond.as_deref(), spec.finalfunc.as_deref(), &arg_types)?;
        let moving = match (&spec.msfunc, &spec.minvfunc, spec.mstype) {
            (Some(f), Some(inv), Some(mstype)) if moving => {
                let forward = self.transition(db, f, mstype, spec.minitcond.as_deref(), spec.mfinalfunc.as_deref(), &arg_types)?;
                let (inverse, inverse_strict, _) = self.support(db, inv, mstype, &arg_types)?;
                Some(Moving { forward, inverse, inverse_strict })
            }
            _ => None,
        };
        let ty = match &plain.finalfunc {
            Some((f, _)) => f.ty(),
            None => plain.stype,
        };
        Ok((UserAgg { name: def.name.clone(), arg_types, plain, moving, ty }, args))
    }

    /// SFUNC / STYPE / INITCOND / FINALFUNC bound for these argument types.
    fn transition(
        &self,
        db: &str,
        sfunc: &str,
        stype: SqlType,
        initcond: Option<&str>,
        finalfunc: Option<&str>,
        arg_types: &[SqlType],
    ) -> Result<Transition> {
        let (sf, strict, _) = self.support(db, sfunc, stype, arg_types)?;
        let sf = coerce(sf, stype)?;
        let init = match initcond {
            None => Value::Null,
            Some(text) => {
                let a: arrow::array::ArrayRef = std::sync::Arc::new(arrow::array::StringArray::from(vec![text]));
                value_at(crate::exec::expr::cast_array(&a, SqlType::Text, stype)?.as_ref(), 0)
            }
        };
        let finalfunc = match finalfunc {
            None => None,
            Some(f) => {
                let (e, strict, _) = self.support(db, f, stype, &[])?;
                Some((e, strict))
            }
        };
        Ok(Transition { sfunc: sf, strict, stype, init, finalfunc })
    }

    /// A support function's body over columns 0 (the state) and 1.. (the
    /// arguments): its expression, whether it is STRICT, and its type.
    fn support(&self, db: &str, fname: &str, stype: SqlType, arg_types: &[SqlType]) -> Result<(Expr, bool, SqlType)> {
        let defs: Vec<FunctionDef> = self.catalog.functions(db, fname).into_iter().filter(|f| f.aggregate.is_none()).collect();
        let cols: Vec<Expr> =
            std::iter::once(stype).chain(arg_types.iter().copied()).enumerate().map(|(index, ty)| Expr::Column { index, ty }).collect();
        if defs.is_empty() {
            // A built-in function (int4pl): a call over the columns.
            if let Some(def) = crate::exec::functions::registry().lookup(fname) {
                let strict = def.strict;
                let e = self.call(fname, cols)?;
                let ty = e.ty();
                return Ok((e, strict, ty));
            }
        }
        let names = vec![None; cols.len()];
        let (f, args) = self.resolve_user_function(fname, defs, cols, &names)?;
        let empty = Scope::new(vec![], None);
        let body = self.bind_body(&f, args, &empty)?;
        let mut inline = true;
        body.walk(&mut |e| {
            if matches!(e, Expr::Subquery { .. } | Expr::Agg(_) | Expr::Window(_) | Expr::Outer { .. }) {
                inline = false;
            }
        });
        if !inline {
            return Err(err!(FeatureNotSupported, "aggregate support function {} is not one expression", f.signature())
                .with_detail("weir runs user-defined aggregates whose support functions' bodies are a single expression."));
        }
        let ty = body.ty();
        Ok((body, f.strict, ty))
    }
}

/// Whether an expression calls a volatile function (or runs a subquery,
/// which may): PostgreSQL then keeps a window aggregate out of moving mode.
fn is_volatile(e: &Expr) -> bool {
    let mut v = false;
    e.walk(&mut |x| match x {
        Expr::Subquery { .. } => v = true,
        Expr::Func { name, .. } => {
            v |= crate::exec::functions::registry().volatility(name) == Some(crate::exec::functions::registry::Volatility::Volatile)
        }
        _ => {}
    });
    v
}
