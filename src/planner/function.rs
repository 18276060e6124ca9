//! Calls of user-defined SQL functions (`CREATE FUNCTION … LANGUAGE sql`;
//! definitions in `catalog/function.rs`, statements in `sql/function.rs`).
//!
//! A call picks one of its name's overloads (the registry's rules: exact
//! matches first, then implicit casts; named arguments and defaults), then
//! the function's body is bound in place of the call with the call's bound
//! arguments standing for its parameters (`$n` or their names):
//! - a scalar body that is one expression (`RETURN x`, `SELECT x + 1`) is
//!   inlined into the caller's expression, as PostgreSQL inlines it;
//! - any other scalar body is a correlated scalar subquery (its first row);
//! - a function in FROM is its body's plan as a derived table, lateral when
//!   its arguments read the FROM items to its left.
//!
//! While a body is bound, a [`FnFrame`] on the planner holds the arguments
//! and the *barrier*: the scope whose names the body may not see (they are
//! the caller's). The binder stops its name lookup there and looks at the
//! parameters instead. A parameter read k scopes inside the barrier is its
//! argument moved k levels out (its columns become outer references).
//!
//! Lives in the planner; reads the catalog.

use sqlparser::ast;

use super::logical::LogicalPlan;
use super::{coerce, ident, Planner, Scope};
use crate::catalog::FunctionDef;
use crate::error::Result;
use crate::exec::expr::{Expr, SubqueryKind};
use crate::exec::plan::PlanColumn;
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// Bodies bound inside bodies (a function calling itself never ends).
const MAX_NESTING: usize = 64;

/// The arguments of a user function's call while its body is bound.
pub struct FnFrame {
    name: String,
    /// Each parameter's name (if it has one) and the call's bound argument.
    params: Vec<(Option<String>, Expr)>,
    /// The scope the body's names stop at, by address.
    barrier: usize,
    /// Scopes from the one the arguments were bound in out to the barrier.
    base: usize,
}

fn addr(s: &Scope) -> usize {
    s as *const Scope as *const () as usize
}

/// A SQL function's body as a query: its last statement, a SELECT or
/// VALUES (parsed again at each call; the text was validated at creation).
pub fn body_query(def: &FunctionDef) -> Result<ast::Query> {
    if def.returns.trigger {
        bail!(FeatureNotSupported, "trigger functions can only be called as triggers");
    }
    if def.body.is_empty() {
        return Err(err!(FeatureNotSupported, "PL/pgSQL function {} cannot run in weir", def.signature())
            .with_detail("weir runs PL/pgSQL bodies of the form BEGIN RETURN expression; END only."));
    }
    let stmts = crate::parser::parse(&def.body)?;
    let n = stmts.len();
    for (i, s) in stmts.into_iter().enumerate() {
        match s {
            crate::parser::Statement::Sql(ast::Statement::Query(q)) if i + 1 == n => return Ok(*q),
            _ => {}
        }
    }
    bail!(FeatureNotSupported, "SQL functions whose body is not one SELECT are not supported: {}", def.signature())
}

/// The one expression of a body that is `SELECT expr` and nothing else.
fn single_expression(q: &ast::Query) -> Option<&ast::Expr> {
    if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return None;
    }
    let ast::SetExpr::Select(s) = q.body.as_ref() else { return None };
    let grouped = match &s.group_by {
        ast::GroupByExpr::Expressions(e, m) => !e.is_empty() || !m.is_empty(),
        ast::GroupByExpr::All(_) => true,
    };
    if !s.from.is_empty()
        || s.selection.is_some()
        || s.having.is_some()
        || s.distinct.is_some()
        || grouped
        || s.projection.len() != 1
        || !s.named_window.is_empty()
        || s.qualify.is_some()
    {
        return None;
    }
    match &s.projection[0] {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    }
}

/// `return type mismatch` (42P13) unless the body's result type `got` may
/// be the declared `want`: equal, or an assignment cast away (PostgreSQL 15
/// coerces a SQL function's result as an assignment does: `sum(int4)`, a
/// bigint, for a declared integer).
fn check_result_type(got: SqlType, want: SqlType, what: &str) -> Result<()> {
    let assignable = (got.is_numeric() && want.is_numeric())
        || want.is_text()
        || (matches!(got, SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz)
            && matches!(want, SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz));
    if got == want || got == SqlType::Unknown || assignable || crate::exec::functions::registry::implicit_coercion(got, want).is_some() {
        return Ok(());
    }
    Err(err!(InvalidFunctionDefinition, "return type mismatch in function declared to return {what}")
        .with_detail(format!("Actual return type is {}.", got.pg_name())))
}

/// `def` with its `anyelement` arguments and result made `ty` (the type
/// a call resolved them to): a function bound like any other.
pub fn specialize(def: &FunctionDef, ty: SqlType) -> FunctionDef {
    let mut d = def.clone();
    for a in d.args.iter_mut().filter(|a| a.polymorphic) {
        a.ty = ty;
        a.polymorphic = false;
    }
    if d.returns.polymorphic {
        d.returns.ty = Some(ty);
        d.returns.polymorphic = false;
    }
    d
}

impl<'a> Planner<'a> {
    /// The user-defined overloads a call of `name` may mean (`f`,
    /// `public.f`, `pg_temp.f`); empty when it names none. Aggregates are
    /// not among them (`user_aggregates`).
    pub(super) fn user_functions(&self, name: &ast::ObjectName) -> Vec<FunctionDef> {
        self.user_routines(name).into_iter().filter(|f| f.aggregate.is_none()).collect()
    }

    /// The user-defined aggregates a call of `name` may mean.
    pub(super) fn user_aggregates(&self, name: &ast::ObjectName) -> Vec<FunctionDef> {
        self.user_routines(name).into_iter().filter(|f| f.aggregate.is_some()).collect()
    }

    fn user_routines(&self, name: &ast::ObjectName) -> Vec<FunctionDef> {
        let Ok((schema, fname)) = super::object_name(name) else { return vec![] };
        match schema.as_deref() {
            None | Some("public") | Some("pg_temp") => self.catalog.functions(&self.database, &fname),
            Some(db) if self.catalog.database_exists(db) => self.catalog.functions(db, &fname),
            Some(_) => vec![],
        }
    }

    /// Pick the overload for a call's bound arguments (`names[k]`: the
    /// k-th argument's name when written `name => x`), and coerce the
    /// arguments to its parameter types, defaults filled in. A polymorphic
    /// overload comes back specialized to the call's `anyelement` type.
    pub(super) fn resolve_user_function(
        &self,
        name: &str,
        defs: Vec<FunctionDef>,
        args: Vec<Expr>,
        names: &[Option<String>],
    ) -> Result<(FunctionDef, Vec<Expr>)> {
        use crate::exec::functions::registry::implicit_coercion;
        let types: Vec<SqlType> = args.iter().map(|a| a.ty()).collect();
        let mut best: Option<((u32, u32), usize, Vec<usize>)> = None;
        let mut tied = false;
        for (d, def) in defs.iter().enumerate() {
            let Some(slots) = slots(def, names) else { continue };
            let mut score = (0u32, 0u32);
            let mut ok = true;
            for (k, &slot) in slots.iter().enumerate() {
                if def.args[slot].polymorphic {
                    // Any type; all of a call's anyelement arguments agree.
                    ok &= polymorphic_type(def, &slots, &types).is_some();
                    score.0 += 1;
                    continue;
                }
                match implicit_coercion(types[k], def.args[slot].ty) {
                    Some((0, _)) => score.0 += 1,
                    Some((_, preferred)) => score.1 += preferred as u32,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            match &best {
                Some((s, _, _)) if *s > score => {}
                Some((s, _, _)) if *s == score => tied = true,
                _ => {
                    tied = false;
                    best = Some((score, d, slots));
                }
            }
        }
        let shown: Vec<SqlType> = types.clone();
        let Some((_, d, slots)) = best else {
            return Err(crate::exec::functions::registry::no_such_function(name, &shown));
        };
        if tied {
            let sig = shown.iter().map(|t| if *t == SqlType::Unknown { "unknown" } else { t.pg_name() }).collect::<Vec<_>>().join(", ");
            return Err(err!(AmbiguousFunction, "function {name}({sig}) is not unique")
                .with_hint("Could not choose a best candidate function. You might need to add explicit type casts."));
        }
        let def = defs.into_iter().nth(d).expect("the chosen overload is one of them");
        let def = match polymorphic_type(&def, &slots, &types) {
            Some(t) if def.args.iter().any(|a| a.polymorphic) => specialize(&def, t),
            _ => def,
        };
        let mut given: Vec<Option<Expr>> = vec![None; def.args.len()];
        for (a, slot) in args.into_iter().zip(slots) {
            given[slot] = Some(a);
        }
        let empty = Scope::new(vec![], None);
        let mut out = Vec::with_capacity(def.args.len());
        for (p, g) in def.args.iter().zip(given) {
            let e = match g {
                Some(e) => e,
                None => {
                    let text = p.default.as_deref().ok_or_else(|| err!(Internal, "argument without a value or a default"))?;
                    self.bind_expr(&crate::parser::parse_expr(text)?, &empty, None)?
                }
            };
            self.infer_param(&e, p.ty);
            out.push(coerce(e, p.ty)?);
        }
        Ok((def, out))
    }

    /// Run `f` with a function frame pushed (and the caller's WITH queries
    /// out of sight: the body cannot name them).
    fn with_frame<T>(&self, frame: FnFrame, f: impl FnOnce() -> Result<T>) -> Result<T> {
        if self.functions.borrow().len() >= MAX_NESTING {
            return Err(err!(StackDepthExceeded, "stack depth limit exceeded")
                .with_hint(format!("SQL function \"{}\" calls itself without end.", frame.name)));
        }
        self.functions.borrow_mut().push(frame);
        let ctes = std::mem::take(&mut *self.ctes.borrow_mut());
        let r = f();
        *self.ctes.borrow_mut() = ctes;
        self.functions.borrow_mut().pop();
        r
    }

    /// Whether `sc` is the innermost function body's barrier.
    pub(super) fn is_barrier(&self, sc: &Scope) -> bool {
        self.functions.borrow().last().is_some_and(|f| f.barrier == addr(sc))
    }

    /// The barrier of the innermost function body seen from `scope`, and
    /// how many scopes out it is; None outside a body (or in a query a body
    /// plans apart from it, such as a view's).
    fn find_barrier<'s>(&self, scope: &'s Scope<'s>) -> Option<(usize, &'s Scope<'s>)> {
        let mut k = 0;
        let mut s = Some(scope);
        while let Some(sc) = s {
            if self.is_barrier(sc) {
                return Some((k, sc));
            }
            k += 1;
            s = sc.parent;
        }
        None
    }

    /// A parameter named `name` (or `function.name`) of the innermost
    /// body, read `k` scopes inside its barrier `barrier`.
    pub(super) fn named_param(&self, qual: Option<&str>, name: &str, k: usize, barrier: &Scope) -> Result<Option<Expr>> {
        let found = {
            let frames = self.functions.borrow();
            let Some(f) = frames.last() else { return Ok(None) };
            if qual.is_some_and(|q| q != f.name) {
                return Ok(None);
            }
            f.params.iter().position(|(n, _)| n.as_deref() == Some(name))
        };
        found.map(|i| self.param_at(i, k, barrier)).transpose()
    }

    /// `$n` inside a function body; None outside one.
    pub(super) fn positional_param(&self, placeholder: &str, scope: &Scope) -> Result<Option<Expr>> {
        if self.functions.borrow().is_empty() {
            return Ok(None);
        }
        let Some((k, barrier)) = self.find_barrier(scope) else { return Ok(None) };
        let n: usize = placeholder.trim_start_matches('$').parse().map_err(|_| err!(Syntax, "bad parameter {placeholder}"))?;
        let count = self.functions.borrow().last().map_or(0, |f| f.params.len());
        if n == 0 || n > count {
            bail!(UndefinedColumn, "there is no parameter ${n}");
        }
        self.param_at(n - 1, k, barrier).map(Some)
    }

    /// The i-th argument of the innermost body, moved out to be read `k`
    /// scopes inside the barrier: its columns become outer references.
    fn param_at(&self, i: usize, k: usize, barrier: &Scope) -> Result<Expr> {
        let (e, base) = {
            let frames = self.functions.borrow();
            let f = frames.last().ok_or_else(|| err!(Internal, "no function frame"))?;
            (f.params[i].1.clone(), f.base)
        };
        let Some(shift) = k.checked_sub(base) else { bail!(Internal, "a parameter read outside its function body") };
        if shift == 0 {
            return Ok(e);
        }
        let mut movable = true;
        let mut read = Vec::new();
        e.walk(&mut |x| match x {
            Expr::Agg(_) | Expr::Window(_) | Expr::Subquery { .. } => movable = false,
            Expr::Func { .. } if super::srf::is_srf(x) => movable = false,
            Expr::Column { index, ty } => read.push((*index, *ty)),
            _ => {}
        });
        if !movable {
            bail!(
                FeatureNotSupported,
                "an aggregate, window function or subquery as the argument of a SQL function whose body reads tables is not supported"
            );
        }
        // Columns of the arguments' own scope: the barrier when base is 0.
        if base == 0 {
            let mut refs = barrier.outer_refs.borrow_mut();
            for r in read {
                if !refs.iter().any(|(j, _)| *j == r.0) {
                    refs.push(r);
                }
            }
        }
        Ok(e.map(0, &|x, _| match x {
            Expr::Column { index, ty } => Some(Expr::Outer { depth: shift, index: *index, ty: *ty }),
            Expr::Outer { depth, index, ty } => Some(Expr::Outer { depth: depth + shift, index: *index, ty: *ty }),
            _ => None,
        }))
    }

    /// A call of a user-defined scalar function (`defs`: its name's
    /// overloads) with bound arguments, in `scope`.
    pub(super) fn bind_user_call(
        &self,
        name: &str,
        defs: Vec<FunctionDef>,
        args: Vec<Expr>,
        names: &[Option<String>],
        scope: &Scope,
    ) -> Result<Expr> {
        let (def, args) = self.resolve_user_function(name, defs, args, names)?;
        if def.returns.set {
            return self.bind_set_call(&def, args, scope);
        }
        let Some(ret) = def.returns.ty else { bail!(FeatureNotSupported, "calling a function returning void is not supported") };
        if def.strict && args.iter().any(|a| matches!(a, Expr::Literal { value: Value::Null, .. })) {
            return Ok(Expr::lit(Value::Null, ret));
        }
        let body = self.bind_body(&def, args.clone(), scope)?;
        // STRICT: a NULL argument is a NULL result without the body.
        let nullable: Vec<Expr> = args.into_iter().filter(|a| !matches!(a, Expr::Literal { .. })).collect();
        if !def.strict || nullable.is_empty() {
            return Ok(body);
        }
        let Some(any_null) =
            super::rewrite::or_all(nullable.into_iter().map(|a| Expr::IsNull { expr: Box::new(a), negated: false }).collect())
        else {
            return Ok(body);
        };
        Ok(Expr::Case { operand: None, whens: vec![(any_null, Expr::lit(Value::Null, ret))], else_expr: Some(Box::new(body)), ty: ret })
    }

    /// A set-returning function of one column called in a select list:
    /// a set-returning marker over its body's rows, correlated with `scope`.
    fn bind_set_call(&self, def: &FunctionDef, args: Vec<Expr>, scope: &Scope) -> Result<Expr> {
        if def.returns.columns.len() > 1 || def.returns.ty.is_none() {
            bail!(FeatureNotSupported, "a function returning a set of records is supported in FROM only");
        }
        let saved = std::mem::take(&mut *scope.outer_refs.borrow_mut());
        let planned = self.plan_set_body(def, args, scope, 0);
        let refs = std::mem::replace(&mut *scope.outer_refs.borrow_mut(), saved);
        let (plan, declared) = planned?;
        {
            let mut cur = scope.outer_refs.borrow_mut();
            for r in &refs {
                if !cur.iter().any(|(i, _)| *i == r.0) {
                    cur.push(*r);
                }
            }
        }
        let correlated = !refs.is_empty() || plan.references_outer(1);
        let rows = Expr::subquery(plan, SubqueryKind::Rows, correlated, refs, SqlType::Bool);
        Ok(super::srf::rows_marker(rows, declared[0].1))
    }

    /// A scalar function's body over its (coerced) arguments, bound in
    /// the caller's `scope`: inlined when it is one expression, else a
    /// scalar subquery of its first row. Checks the result's type.
    pub fn bind_body(&self, def: &FunctionDef, args: Vec<Expr>, scope: &Scope) -> Result<Expr> {
        let ret = def.returns.ty.unwrap_or(SqlType::Unknown);
        if def.language == "internal" {
            return self.bind_internal(def, args);
        }
        // PL/pgSQL beyond `RETURN expr` is interpreted when it runs; so is
        // `RETURN expr` over a composite argument (its fields are the
        // interpreter's) or calling itself (inlining would not end).
        let interpreted = def.body.is_empty()
            || def.args.iter().any(|a| a.type_name.is_some())
            || self.functions.borrow().iter().any(|f| f.name == def.name);
        if def.language == "plpgsql" && interpreted && !def.returns.trigger && !def.returns.set && def.returns.columns.is_empty() {
            return Ok(Expr::Func { name: format!("plpgsql:{}/{}/{}", def.database, def.name, def.id), args, ty: ret });
        }
        let q = body_query(def)?;
        let params = def.args.iter().map(|a| a.name.clone()).zip(args).collect();
        let frame = FnFrame { name: def.name.clone(), params, barrier: addr(scope), base: 0 };
        let e = self.with_frame(frame, || {
            if let Some(x) = single_expression(&q) {
                // Aggregates and windows need the subquery's one-row SELECT.
                if let Ok(e) = self.bind_expr(x, scope, None) {
                    if !super::srf::contains_srf(&e) {
                        return Ok(e);
                    }
                }
            }
            let (mut plan, correlated, outer_refs) = self.plan_subquery(&q, scope)?;
            if plan.columns().len() > 1 && def.returns.type_name.is_some() {
                plan = one_record(plan, &def.name);
            }
            let cols = plan.columns();
            if cols.len() != 1 {
                return Err(err!(InvalidFunctionDefinition, "return type mismatch in function declared to return {}", ret.pg_name())
                    .with_detail("Final statement must return exactly one column."));
            }
            let ty = cols[0].ty;
            let plan = LogicalPlan::Limit { input: Box::new(plan), limit: Some(1), offset: 0 };
            Ok(Expr::subquery(plan, SubqueryKind::Scalar, correlated, outer_refs, ty))
        })?;
        if def.returns.ty.is_none() {
            return Ok(e);
        }
        check_result_type(e.ty(), ret, ret.pg_name())?;
        coerce(e, ret)
    }

    /// A call of a LANGUAGE internal function: the built-in it names over the
    /// arguments' values (a base type's are its representation's).
    fn bind_internal(&self, def: &FunctionDef, args: Vec<Expr>) -> Result<Expr> {
        if super::user_type::io_function(&def.source).is_some() || def.args.iter().any(|a| a.type_name.is_some()) {
            bail!(FeatureNotSupported, "calling function {} (the built-in {}) is not supported", def.name, def.source);
        }
        let args: Vec<Expr> = args
            .into_iter()
            .map(|a| match a.ty() {
                t @ SqlType::Base { .. } => Expr::Cast { expr: Box::new(a), ty: t.physical() },
                _ => a,
            })
            .collect();
        let e = self.call(&def.source, args)?;
        let ret = def.returns.ty.unwrap_or(SqlType::Unknown);
        if ret.is_base() {
            return Ok(Expr::Cast { expr: Box::new(e), ty: ret });
        }
        coerce(e, ret)
    }

    /// A user-defined function in FROM (`SELECT * FROM f(1) AS t(a, b)`):
    /// its body's rows as a derived table; its columns are the declared
    /// ones (`RETURNS TABLE (…)`) or one named after the function or alias.
    pub(super) fn plan_user_function_in_from(
        &self,
        fname: &str,
        defs: Vec<FunctionDef>,
        alias: Option<&ast::TableAlias>,
        asts: &[ast::Expr],
        names: &[Option<String>],
        outer: Option<&Scope>,
    ) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
        // With no enclosing scope, an empty one is the body's barrier.
        let root = Scope::new(vec![], None);
        let outer = outer.unwrap_or(&root);
        let scope = Scope::new(vec![], Some(outer));
        let bound: Vec<Expr> = asts.iter().map(|e| self.bind_expr(e, &scope, None)).collect::<Result<_>>()?;
        let (def, args) = self.resolve_user_function(fname, defs, bound, names)?;
        let (mut plan, mut declared) = self.plan_set_body(&def, args, outer, 1)?;
        // A composite result (RETURNS t for a composite type or a table's row
        // type) gives t's fields as columns, read from each value's record text.
        let fields = def
            .returns
            .type_name
            .as_deref()
            .and_then(|n| super::user_type::named_type(self.catalog, &def.database, n))
            .and_then(|t| match t.kind {
                crate::catalog::TypeKind::Composite(f) => Some(f),
                _ => None,
            })
            .filter(|_| declared.len() == 1);
        let composite = fields.is_some();
        if let Some(fields) = fields {
            let exprs = (0..fields.len())
                .map(|k| Expr::Func {
                    name: "record_field".into(),
                    args: vec![Expr::Column { index: 0, ty: SqlType::Text }, Expr::lit(crate::types::Value::Int(k as i64), SqlType::Int4)],
                    ty: fields[k].1,
                })
                .collect();
            let columns = fields.iter().map(|(n, t)| PlanColumn { name: n.clone(), qualifier: None, ty: *t }).collect();
            plan = LogicalPlan::Project { input: Box::new(plan), exprs, columns };
            declared = fields;
        }
        let qual = alias.map(|a| ident(&a.name)).unwrap_or_else(|| fname.to_string());
        // A function of a scalar type gives one column named after the
        // alias, or its OUT parameter, or itself; a composite result its fields.
        let scalar = def.returns.ty.is_some() && !composite;
        let cols: Vec<PlanColumn> = declared
            .iter()
            .enumerate()
            .map(|(i, (n, ty))| {
                let name = match alias.and_then(|a| a.columns.get(i)) {
                    Some(c) => ident(&c.name),
                    None if scalar && alias.is_some() => qual.clone(),
                    None => n.clone(),
                };
                PlanColumn { name, qualifier: Some(qual.clone()), ty: *ty }
            })
            .collect();
        if let Some(a) = alias.filter(|a| a.columns.len() > cols.len()) {
            bail!(
                InvalidColumnReference,
                "table \"{}\" has {} columns available but {} columns specified",
                ident(&a.name),
                cols.len(),
                a.columns.len()
            );
        }
        let exprs = (0..cols.len()).map(|i| Expr::Column { index: i, ty: cols[i].ty }).collect();
        Ok((LogicalPlan::Project { input: Box::new(plan), exprs, columns: cols.clone() }, cols))
    }

    /// A function's body as rows of its declared columns (one row at most
    /// for a scalar function), planned inside `outer`, its barrier; `base`:
    /// how many scopes inside `outer` the arguments were bound (1 for a FROM
    /// item's, 0 for a select list's).
    pub fn plan_set_body(
        &self,
        def: &FunctionDef,
        args: Vec<Expr>,
        outer: &Scope,
        base: usize,
    ) -> Result<(LogicalPlan, Vec<(String, SqlType)>)> {
        let q = body_query(def)?;
        let params = def.args.iter().map(|a| a.name.clone()).zip(args).collect();
        let frame = FnFrame { name: def.name.clone(), params, barrier: addr(outer), base };
        let plan = self.with_frame(frame, || self.plan_query(&q, Some(outer)))?;
        let declared: Vec<(String, SqlType)> = if def.returns.columns.is_empty() {
            vec![(def.name.clone(), def.returns.ty.unwrap_or(SqlType::Unknown))]
        } else {
            def.returns.columns.clone()
        };
        let what = if def.returns.columns.is_empty() { def.returns.ty.map_or("void", |t| t.pg_name()) } else { "record" };
        let mut plan = plan;
        if declared.len() == 1 && plan.columns().len() > 1 && def.returns.type_name.is_some() {
            plan = one_record(plan, &def.name);
        }
        let cols = plan.columns().to_vec();
        if cols.len() != declared.len() {
            let detail = if declared.len() == 1 {
                "Final statement must return exactly one column.".to_string()
            } else {
                format!("Final statement returns {} columns.", cols.len())
            };
            return Err(err!(InvalidFunctionDefinition, "return type mismatch in function declared to return {what}").with_detail(detail));
        }
        let mut exprs = Vec::with_capacity(cols.len());
        for (i, (c, (_, want))) in cols.iter().zip(&declared).enumerate() {
            check_result_type(c.ty, *want, what)?;
            exprs.push(coerce(Expr::Column { index: i, ty: c.ty }, *want)?);
        }
        let columns: Vec<PlanColumn> = declared.iter().map(|(n, t)| PlanColumn { name: n.clone(), qualifier: None, ty: *t }).collect();
        plan = LogicalPlan::Project { input: Box::new(plan), exprs, columns };
        if !def.returns.set {
            plan = LogicalPlan::Limit { input: Box::new(plan), limit: Some(1), offset: 0 };
        }
        Ok((plan, declared))
    }
}

/// A composite result written as its fields (`SELECT 1, 2` in a function
/// returning a composite type): the fields as one record, named `name`.
fn one_record(plan: LogicalPlan, name: &str) -> LogicalPlan {
    let cols = plan.columns();
    let args = (0..cols.len()).map(|i| Expr::Column { index: i, ty: cols[i].ty }).collect();
    let c = PlanColumn { name: name.to_string(), qualifier: None, ty: SqlType::Text };
    let e = Expr::Func { name: "record_out".into(), args, ty: SqlType::Text };
    LogicalPlan::Project { input: Box::new(plan), exprs: vec![e], columns: vec![c] }
}

/// The type a call gives `def`'s `anyelement` arguments: the common type
/// of the arguments in those slots (text when all are untyped literals);
/// None when they have none.
fn polymorphic_type(def: &FunctionDef, slots: &[usize], types: &[SqlType]) -> Option<SqlType> {
    let mut ty = SqlType::Unknown;
    for (k, &slot) in slots.iter().enumerate() {
        if def.args[slot].polymorphic {
            ty = SqlType::common(ty, types[k])?;
        }
    }
    Some(if ty == SqlType::Unknown { SqlType::Text } else { ty })
}

/// The parameter each call argument fills: positional ones first, then
/// named ones; None when the call does not fit `def` (too many or too few
/// arguments, an unknown or repeated name, a missing one without default).
fn slots(def: &FunctionDef, names: &[Option<String>]) -> Option<Vec<usize>> {
    let mut used = vec![false; def.args.len()];
    let mut out = Vec::with_capacity(names.len());
    let mut named_seen = false;
    for (k, n) in names.iter().enumerate() {
        let slot = match n {
            None if !named_seen => k,
            None => return None,
            Some(n) => {
                named_seen = true;
                def.args.iter().position(|a| a.name.as_deref() == Some(n.as_str()))?
            }
        };
        if slot >= used.len() || used[slot] {
            return None;
        }
        used[slot] = true;
        out.push(slot);
    }
    let complete = used.iter().zip(&def.args).all(|(u, a)| *u || a.default.is_some());
    complete.then_some(out)
}
