//! The binder's query part: builds the logical plan of a query from
//! sqlparser's AST. FROM with join ordering (equalities become join keys,
//! WHERE conjuncts are placed over the relation they read; the pushdown
//! pass moves them further down), WHERE, GROUP BY / aggregates / HAVING,
//! window functions, the select list, DISTINCT, set operations, ORDER BY
//! and LIMIT.

use std::collections::HashSet;

use sqlparser::ast::{self, SetExpr, TableFactor};

use super::bind::AggCollector;
use super::logical::{LogicalPlan as Plan, Scan};
use super::{ident, object_name, Planner, Scope};
use crate::error::Result;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::plan::{AggCall, JoinKind, PlanColumn, SetOpKind, SortKey, WindowCall};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// One relation of a FROM list, before join ordering.
struct Rel {
    plan: Plan,
    columns: Vec<PlanColumn>,
}

/// A LATERAL FROM item's plan, its columns, and the columns of the items
/// to its left that it reads.
struct Lateral {
    plan: Plan,
    columns: Vec<PlanColumn>,
    refs: Vec<(usize, SqlType)>,
}

impl Lateral {
    /// The table name of the first left column the item reads (for errors).
    fn first_ref_qualifier(&self, left: &[PlanColumn]) -> String {
        self.refs.first().and_then(|(i, _)| left.get(*i)).and_then(|c| c.qualifier.clone()).unwrap_or_default()
    }
}

/// `left` joined to a LATERAL item: a ProjectSet over `left` whose one
/// call runs the item's plan for each row (outer references substituted),
/// giving left's columns then the item's; `left_join` keeps rows the item
/// gives nothing for, with NULLs.
fn lateral_rel(left: Rel, lat: Lateral, left_join: bool) -> Rel {
    use crate::exec::expr::SubqueryKind;
    use crate::exec::plan::{SrfCall, SrfKind};
    let out: Vec<(String, SqlType)> = lat.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
    let sub = Expr::subquery(lat.plan, SubqueryKind::Rows, true, lat.refs, SqlType::Bool);
    let mut columns = left.columns;
    columns.extend(lat.columns);
    let plan = Plan::ProjectSet {
        input: Box::new(left.plan),
        srfs: vec![SrfCall { kind: SrfKind::Lateral { left: left_join }, args: vec![sub], out }],
        columns: columns.clone(),
    };
    Rel { plan, columns }
}

impl<'a> Planner<'a> {
    pub fn plan_query(&self, q: &ast::Query, outer: Option<&Scope>) -> Result<Plan> {
        match &q.with {
            Some(with) => self.plan_with(q, with, outer),
            None => self.plan_query_body(q, outer),
        }
    }

    /// A query without its WITH clause (CTEs are in scope by name).
    pub(super) fn plan_query_body(&self, q: &ast::Query, outer: Option<&Scope>) -> Result<Plan> {
        check_locking(q, self.ctes.borrow().iter().map(|c| c.name.clone()).collect())?;
        let order_by: Vec<ast::OrderByExpr> = match &q.order_by {
            None => vec![],
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(v) => v.clone(),
                ast::OrderByKind::All(_) => bail!(FeatureNotSupported, "ORDER BY ALL is not supported"),
            },
        };
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (limit.clone(), offset.as_ref().map(|o| o.value.clone())),
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit.clone()), Some(offset.clone())),
        };
        let mut plan = match q.body.as_ref() {
            SetExpr::Select(s) => self.plan_select(s, &order_by, outer)?,
            other => {
                let p = self.plan_set_expr(other, outer)?;
                if order_by.is_empty() {
                    p
                } else {
                    self.order_by_output(p, &order_by, outer)?
                }
            }
        };
        if limit.is_some() || offset.is_some() {
            let lim = limit.map(|l| self.const_usize(&l, "LIMIT")).transpose()?.flatten();
            let off = offset.map(|o| self.const_usize(&o, "OFFSET")).transpose()?.flatten().unwrap_or(0);
            if let (Plan::Sort { fetch, .. }, Some(l)) = (&mut plan, lim) {
                *fetch = Some(l + off);
            }
            plan = Plan::Limit { input: Box::new(plan), limit: lim, offset: off };
        }
        Ok(plan)
    }

    /// A LIMIT/OFFSET value: a constant (NULL = no limit).
    fn const_usize(&self, e: &ast::Expr, what: &str) -> Result<Option<usize>> {
        let scope = Scope::new(vec![], None);
        let b = self.bind_expr(e, &scope, None)?;
        let b = super::coerce(b, SqlType::Int8)?;
        let v = self.eval_const(&b)?;
        match v {
            Value::Null => Ok(None),
            Value::Int(i) if i >= 0 => Ok(Some(i as usize)),
            Value::Int(_) => bail!(InvalidParameterValue, "{what} must not be negative"),
            _ => bail!(Syntax, "argument of {what} must be an integer"),
        }
    }

    /// Evaluate a constant expression now.
    pub fn eval_const(&self, e: &Expr) -> Result<Value> {
        let unit = arrow::array::RecordBatch::try_new_with_options(
            std::sync::Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        // An uncorrelated subquery (`ROWS (SELECT …) PRECEDING`, `LIMIT (SELECT …)`) runs now.
        let e = super::physical::physical_expr(e, &self.ctx)?;
        let a = e.eval(&unit, &self.ctx)?;
        Ok(crate::types::value_at(a.as_ref(), 0))
    }

    pub(super) fn plan_set_expr(&self, s: &SetExpr, outer: Option<&Scope>) -> Result<Plan> {
        match s {
            SetExpr::Select(sel) => self.plan_select(sel, &[], outer),
            SetExpr::Query(q) => self.plan_query(q, outer),
            SetExpr::Values(v) => self.plan_values(v, outer),
            SetExpr::SetOperation { left, op, set_quantifier, right } => {
                self.set_branch.set(matches!(left.as_ref(), SetExpr::Select(_)));
                let l = self.plan_set_expr(left, outer);
                self.set_branch.set(false);
                let l = l?;
                self.set_branch.set(matches!(right.as_ref(), SetExpr::Select(_)));
                let r = self.plan_set_expr(right, outer);
                self.set_branch.set(false);
                let r = r?;
                let (lc, rc) = (l.columns().to_vec(), r.columns().to_vec());
                if lc.len() != rc.len() {
                    bail!(Syntax, "each {} query must have the same number of columns", op.to_string().to_uppercase());
                }
                let mut types = Vec::new();
                for (a, b) in lc.iter().zip(&rc) {
                    let t = SqlType::common(a.ty, b.ty).ok_or_else(|| {
                        err!(DatatypeMismatch, "{} types {} and {} cannot be matched", op.to_string().to_uppercase(), a.ty, b.ty)
                    })?;
                    types.push(if t == SqlType::Unknown { SqlType::Text } else { t });
                }
                let l = cast_columns(l, &types)?;
                let r = cast_columns(r, &types)?;
                let kind = match op {
                    ast::SetOperator::Union => SetOpKind::Union,
                    ast::SetOperator::Intersect => SetOpKind::Intersect,
                    ast::SetOperator::Except | ast::SetOperator::Minus => SetOpKind::Except,
                };
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                Ok(Plan::SetOp { left: Box::new(l), right: Box::new(r), kind, all })
            }
            // `TABLE t` is `SELECT * FROM t`.
            SetExpr::Table(t) => {
                let Some(table) = &t.table_name else { bail!(Syntax, "syntax error at or near \"TABLE\"") };
                let quote = |n: &ast::Ident| format!("\"{}\"", ident(n).replace('"', "\"\""));
                let name = match &t.schema_name {
                    Some(schema) => format!("{}.{}", quote(schema), quote(table)),
                    None => quote(table),
                };
                let q = crate::parser::parse_query(&format!("SELECT * FROM {name}"))?;
                self.plan_query(&q, outer)
            }
            _ => bail!(FeatureNotSupported, "unsupported query form"),
        }
    }

    pub fn plan_values(&self, v: &ast::Values, outer: Option<&Scope>) -> Result<Plan> {
        let scope = Scope::new(vec![], outer);
        let mut rows: Vec<Vec<Expr>> = Vec::new();
        for r in &v.rows {
            // `t.*` in a VALUES list stands for t's columns.
            let mut row = Vec::with_capacity(r.content.len());
            for e in &r.content {
                match e {
                    ast::Expr::QualifiedWildcard(q, _) => {
                        for c in self.star_columns(q, &scope)? {
                            row.push(self.bind_expr(&c, &scope, None)?);
                        }
                    }
                    _ => row.push(self.bind_expr(e, &scope, None)?),
                }
            }
            rows.push(row);
        }
        let width = rows.first().map(|r| r.len()).unwrap_or(0);
        if rows.iter().any(|r| r.len() != width) {
            bail!(Syntax, "VALUES lists must all be the same length");
        }
        let mut types = vec![SqlType::Unknown; width];
        for r in &rows {
            for (i, e) in r.iter().enumerate() {
                types[i] = SqlType::common(types[i], e.ty())
                    .ok_or_else(|| err!(DatatypeMismatch, "VALUES types {} and {} cannot be matched", types[i], e.ty()))?;
            }
        }
        let columns: Vec<PlanColumn> = types.iter().enumerate().map(|(i, t)| PlanColumn::new(format!("column{}", i + 1), *t)).collect();
        let rows = rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .zip(&types)
                    .map(|(e, t)| super::coerce(e, if *t == SqlType::Unknown { SqlType::Unknown } else { *t }))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        Ok(Plan::Values { rows, columns })
    }

    /// ORDER BY over the output of a set operation: names or positions.
    fn order_by_output(&self, plan: Plan, order_by: &[ast::OrderByExpr], outer: Option<&Scope>) -> Result<Plan> {
        let cols = plan.columns().to_vec();
        let scope = Scope::new(cols.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: None, ty: c.ty }).collect(), outer);
        let mut keys = Vec::new();
        for o in order_by {
            let expr = match &o.expr {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                    let k = ordinal(&v.value, cols.len())?;
                    Expr::Column { index: k, ty: cols[k].ty }
                }
                e => self.bind_expr(e, &scope, None)?,
            };
            keys.push(sort_key(expr, &o.options));
        }
        Ok(Plan::Sort { input: Box::new(plan), keys, fetch: None })
    }

    fn plan_select(&self, s: &ast::Select, order_by: &[ast::OrderByExpr], outer: Option<&Scope>) -> Result<Plan> {
        // Taken at once: SELECTs nested in this one are no set operation's branch.
        let branch = self.set_branch.replace(false);
        if let Some((s, order_by)) = super::named_window::resolve(s, order_by)? {
            self.set_branch.set(branch);
            return self.plan_select(&s, &order_by, outer);
        }
        let untyped_output = |e: &Expr| untyped_element(e) || (branch && matches!(e, Expr::Literal { ty: SqlType::Unknown, .. }));
        if !matches!(s.group_by, ast::GroupByExpr::Expressions(_, _)) {
            bail!(FeatureNotSupported, "GROUP BY ALL is not supported");
        }
        // FROM and WHERE.
        let (mut plan, columns) = self.plan_from(&s.from, s.selection.as_ref(), outer)?;
        let scope = Scope::new(columns.clone(), outer);
        *scope.records.borrow_mut() = super::srf::record_columns(&plan);
        let mut deferred_filter = None;
        if let Some(w) = &s.selection {
            // Conjuncts were already used in plan_from; only those with
            // subqueries (or no columns at all) are applied here.
            let conj = self.bind_where(w, &scope)?;
            conj.iter().try_for_each(|c| super::srf::refuse_in(c, "WHERE"))?;
            let rest: Vec<Expr> = conj.into_iter().filter(|c| deferred(c)).collect();
            if !rest.is_empty() {
                deferred_filter = Some(and_all(rest));
            }
        }
        if let Some(f) = deferred_filter {
            plan = Plan::Filter { input: Box::new(plan), predicate: f };
        }

        // Select list: expand wildcards, bind with aggregate collection.
        let times: Vec<usize> = super::analysis::source_columns(&plan)
            .iter()
            .enumerate()
            .filter(|(_, c)| c.as_ref().is_some_and(|c| c.role == super::analysis::ColumnRole::TimeIndex))
            .map(|(i, _)| i)
            .collect();
        let collector = AggCollector {
            time_index: match times[..] {
                [i] => Some((i, columns[i].ty)),
                _ => None,
            },
        };
        let mut items: Vec<(Expr, String)> = Vec::new();
        for item in &s.projection {
            match item {
                ast::SelectItem::Wildcard(_) => {
                    if columns.is_empty() && s.from.is_empty() {
                        bail!(Syntax, "SELECT * with no tables specified is not valid");
                    }
                    for (i, c) in columns.iter().enumerate() {
                        if !super::is_hidden(c) {
                            items.push((Expr::Column { index: i, ty: c.ty }, c.name.clone()));
                        }
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name(n)?.1,
                        _ => bail!(FeatureNotSupported, "unsupported wildcard"),
                    };
                    let mut any = false;
                    for (i, c) in columns.iter().enumerate() {
                        if super::visible_qualifier(c) == Some(q.as_str()) && !super::is_system(c) {
                            items.push((Expr::Column { index: i, ty: c.ty }, c.name.clone()));
                            any = true;
                        }
                    }
                    if !any {
                        // An enclosing query's (or a LATERAL item's left) table.
                        let Some(parent) = scope.parent else {
                            bail!(UndefinedTable, "missing FROM-clause entry for table \"{q}\"");
                        };
                        let name = ast::ObjectName::from(vec![ast::Ident::with_quote('"', q.clone())]);
                        for e in self.star_columns(&name, parent)? {
                            let ast::Expr::CompoundIdentifier(parts) = &e else { unreachable!() };
                            let col = parts[1].value.clone();
                            items.push((self.bind_expr(&e, &scope, Some(&collector))?, col));
                        }
                    }
                }
                ast::SelectItem::UnnamedExpr(e) => {
                    let b = self.bind_expr(e, &scope, Some(&collector))?;
                    items.push((b, output_name(e)));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let b = self.bind_expr(expr, &scope, Some(&collector))?;
                    items.push((b, ident(alias)));
                }
                other => bail!(FeatureNotSupported, "select item {other} is not supported"),
            }
        }

        // GROUP BY items: positions and output names refer to the list.
        let group_asts: Vec<ast::Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(v, _) => v.clone(),
            _ => vec![],
        };
        let mut group_by: Vec<Expr> = Vec::new();
        for g in &group_asts {
            let e = match g {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                    let k = ordinal(&v.value, items.len())?;
                    items[k].0.clone()
                }
                ast::Expr::Identifier(i) if !columns.iter().any(|c| c.name == ident(i)) && items.iter().any(|(_, n)| *n == ident(i)) => {
                    items.iter().find(|(_, n)| *n == ident(i)).unwrap().0.clone()
                }
                other => self.bind_expr(other, &scope, None)?,
            };
            if contains_agg(&e) {
                bail!(Grouping, "aggregate functions are not allowed in GROUP BY");
            }
            if super::srf::contains_srf(&e) {
                bail!(FeatureNotSupported, "set-returning functions in GROUP BY are not supported");
            }
            group_by.push(e);
        }
        // Grouping by a table's primary key groups by its other columns too
        // (PostgreSQL's functional dependency): they may appear ungrouped.
        if let [twj] = s.from.as_slice() {
            let dependent = self.dependent_group_columns(twj, &columns, &group_by);
            group_by.extend(dependent);
        }
        let having = s.having.as_ref().map(|h| self.bind_expr(h, &scope, Some(&collector))).transpose()?;
        having.iter().try_for_each(|h| super::srf::refuse_in(h, "HAVING"))?;

        // ORDER BY keys, bound now so their aggregates are collected too.
        enum OrderRef {
            Output(usize),
            Expr(Expr),
        }
        let mut order_refs = Vec::new();
        for o in order_by {
            let r = match &o.expr {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => OrderRef::Output(ordinal(&v.value, items.len())?),
                ast::Expr::Identifier(i)
                    if items.iter().filter(|(_, n)| *n == ident(i)).count() >= 1 && {
                        // Output names win over input columns for bare names.
                        true
                    } =>
                {
                    OrderRef::Output(items.iter().position(|(_, n)| *n == ident(i)).unwrap())
                }
                e => OrderRef::Expr(self.bind_expr(e, &scope, Some(&collector))?),
            };
            order_refs.push((r, &o.options));
        }

        // DISTINCT ON keys, bound like ORDER BY keys.
        let mut distinct_on: Vec<Expr> = match &s.distinct {
            // `DISTINCT ON (1)` is the first output column, as in ORDER BY.
            Some(ast::Distinct::On(exprs)) => exprs
                .iter()
                .map(|e| match e {
                    ast::Expr::Value(v) if matches!(&v.value, ast::Value::Number(..)) => {
                        let ast::Value::Number(n, _) = &v.value else { unreachable!() };
                        match n.parse::<usize>() {
                            Ok(k) if (1..=items.len()).contains(&k) => Ok(items[k - 1].0.clone()),
                            _ => bail!(InvalidColumnReference, "SELECT DISTINCT ON position {n} is not in select list"),
                        }
                    }
                    _ => self.bind_expr(e, &scope, Some(&collector)),
                })
                .collect::<Result<_>>()?,
            _ => vec![],
        };
        // hop(ts, slide, size) as a key: each row joins every window holding it.
        let (expanded, hop) = super::hop::expand(self, plan, &mut group_by)?;
        plan = expanded;
        let mut having = having;
        if let Some((old, new)) = &hop {
            let sub = |e: &Expr| super::hop::substitute(e, old, new);
            for (e, _) in items.iter_mut() {
                *e = sub(e);
            }
            having = having.as_ref().map(sub);
            for (r, _) in order_refs.iter_mut() {
                if let OrderRef::Expr(e) = r {
                    *e = sub(e);
                }
            }
            distinct_on = distinct_on.iter().map(sub).collect();
        }
        let mut proj: Vec<Expr> = items.iter().map(|(e, _)| e.clone()).collect();
        let mut order_exprs: Vec<Option<Expr>> = order_refs
            .iter()
            .map(|(r, _)| match r {
                OrderRef::Expr(e) => Some(e.clone()),
                _ => None,
            })
            .collect();
        // Aggregate calls, in the order they were written; equal calls
        // are computed once.
        let mut aggs: Vec<AggCall> = Vec::new();
        {
            let mut collect = |e: &Expr| {
                e.walk(&mut |x| {
                    if let Expr::Agg(a) = x {
                        if !aggs.contains(a.as_ref()) {
                            aggs.push((**a).clone());
                        }
                    }
                })
            };
            proj.iter().for_each(&mut collect);
            having.iter().for_each(&mut collect);
            order_exprs.iter().flatten().for_each(&mut collect);
            distinct_on.iter().for_each(&mut collect);
        }
        if having.as_ref().is_some_and(contains_window) {
            bail!(Grouping, "window functions are not allowed in HAVING");
        }
        let aggregated = !aggs.is_empty() || !group_by.is_empty() || having.is_some();
        if aggregated {
            let mut agg_cols: Vec<PlanColumn> =
                group_by.iter().enumerate().map(|(i, g)| PlanColumn::new(format!("group{i}"), g.ty())).collect();
            for (i, a) in aggs.iter().enumerate() {
                agg_cols.push(PlanColumn::new(format!("agg{i}"), a.ty));
            }
            // An ordered-set aggregate's direct arguments are evaluated once
            // per group: they may use grouped columns only.
            for a in &aggs {
                if let crate::exec::plan::AggFunc::OrderedSet(_) = a.func {
                    for d in &a.args[..a.value_arity()] {
                        post_agg(d, &group_by, &[])?;
                    }
                }
            }
            let rewrite = |e: &Expr| post_agg(e, &group_by, &aggs);
            proj = proj.iter().map(rewrite).collect::<Result<_>>()?;
            having = having.as_ref().map(rewrite).transpose()?;
            order_exprs = order_exprs.iter().map(|o| o.as_ref().map(rewrite).transpose()).collect::<Result<_>>()?;
            distinct_on = distinct_on.iter().map(rewrite).collect::<Result<_>>()?;
            plan = Plan::Aggregate { input: Box::new(plan), group_by: group_by.clone(), aggs, columns: agg_cols };
            if let Some(h) = having {
                plan = Plan::Filter { input: Box::new(plan), predicate: super::coerce(h, SqlType::Bool)? };
            }
        }

        // Window functions run over the (aggregated) rows, before the
        // projection; each call becomes a column of the window node.
        let mut calls: Vec<WindowCall> = Vec::new();
        {
            let mut collect = |e: &Expr| -> Result<()> {
                let mut nested = false;
                e.walk(&mut |x| {
                    if let Expr::Window(w) = x {
                        nested |= w.args.iter().chain(&w.partition_by).chain(w.order_by.iter().map(|k| &k.expr)).any(contains_window);
                        if !calls.contains(w.as_ref()) {
                            calls.push((**w).clone());
                        }
                    }
                });
                if nested {
                    bail!(Grouping, "window function calls cannot be nested");
                }
                Ok(())
            };
            proj.iter().try_for_each(&mut collect)?;
            order_exprs.iter().flatten().try_for_each(&mut collect)?;
            distinct_on.iter().try_for_each(&mut collect)?;
        }
        if !calls.is_empty() {
            // PostgreSQL's order of the windows (their sorts stack in it).
            let mut sort_refs: Vec<Expr> = order_refs
                .iter()
                .zip(&order_exprs)
                .filter_map(|((r, _), oe)| match r {
                    OrderRef::Output(k) => proj.get(*k).cloned(),
                    OrderRef::Expr(_) => oe.clone(),
                })
                .collect();
            if aggregated {
                sort_refs.extend(group_by.iter().enumerate().map(|(i, g)| Expr::Column { index: i, ty: g.ty() }));
            }
            super::window_order::order_calls(&mut calls, &sort_refs);
            let mut cols = plan.columns().to_vec();
            let base = cols.len();
            for (k, c) in calls.iter().enumerate() {
                cols.push(PlanColumn::new(format!("window{k}"), c.ty));
            }
            let place = |e: &Expr| {
                e.map(0, &|x, d| match x {
                    Expr::Window(w) if d == 0 => {
                        calls.iter().position(|c| c == w.as_ref()).map(|k| Expr::Column { index: base + k, ty: w.ty })
                    }
                    _ => None,
                })
            };
            proj = proj.iter().map(place).collect();
            order_exprs = order_exprs.iter().map(|o| o.as_ref().map(place)).collect();
            distinct_on = distinct_on.iter().map(place).collect();
            plan = Plan::Window { input: Box::new(plan), calls, columns: cols };
        }

        // Set-returning calls of the list run in a ProjectSet under the
        // projection.
        {
            let mut orders: Vec<Expr> = order_exprs.iter().flatten().cloned().collect();
            plan = super::srf::project_set(plan, &mut [&mut proj, &mut orders, &mut distinct_on])?;
            let mut it = orders.into_iter();
            for o in order_exprs.iter_mut().flatten() {
                *o = it.next().unwrap();
            }
        }

        // Projection with hidden sort columns appended.
        let mut out_cols: Vec<PlanColumn> = items
            .iter()
            .zip(&proj)
            .map(|((_, n), e)| {
                PlanColumn::new(n.clone(), if e.ty() == SqlType::Unknown && !untyped_output(e) { SqlType::Text } else { e.ty() })
            })
            .collect();
        let visible = out_cols.len();
        let mut keys = Vec::new();
        for ((r, opts), oe) in order_refs.iter().zip(order_exprs) {
            let idx = match r {
                OrderRef::Output(k) => *k,
                OrderRef::Expr(_) => {
                    let e = oe.unwrap();
                    // Reuse an identical output column when there is one.
                    if let Some(k) = proj.iter().position(|p| *p == e) {
                        k
                    } else {
                        if matches!(s.distinct, Some(ast::Distinct::Distinct)) {
                            bail!(InvalidParameterValue, "for SELECT DISTINCT, ORDER BY expressions must appear in select list");
                        }
                        proj.push(e.clone());
                        out_cols.push(PlanColumn::new(format!("__order{}", proj.len()), e.ty()));
                        proj.len() - 1
                    }
                }
            };
            keys.push(sort_key(Expr::Column { index: idx, ty: out_cols[idx].ty }, opts));
        }
        // DISTINCT ON keys become (hidden) output columns too.
        let mut distinct_on_cols = Vec::new();
        for e in &distinct_on {
            let k = match proj.iter().position(|p| p == e) {
                Some(k) => k,
                None => {
                    proj.push(e.clone());
                    out_cols.push(PlanColumn::new(format!("__distinct{}", proj.len()), e.ty()));
                    proj.len() - 1
                }
            };
            distinct_on_cols.push(Expr::Column { index: k, ty: out_cols[k].ty });
        }
        // PostgreSQL's rule: ORDER BY's leading keys are the DISTINCT ON expressions (in any
        // order) until every one of them has appeared.
        if !distinct_on_cols.is_empty() {
            let mut left: HashSet<usize> =
                distinct_on_cols.iter().filter_map(|e| if let Expr::Column { index, .. } = e { Some(*index) } else { None }).collect();
            for k in &keys {
                if left.is_empty() {
                    break;
                }
                let Expr::Column { index, .. } = &k.expr else { break };
                // The same expression in two output columns counts as one.
                let same: Vec<usize> = left.iter().copied().filter(|&d| d == *index || proj.get(d) == proj.get(*index)).collect();
                for d in &same {
                    left.remove(d);
                }
                if same.is_empty()
                    && !distinct_on_cols
                        .iter()
                        .any(|d| matches!(d, Expr::Column { index: i, .. } if i == index || proj.get(*i) == proj.get(*index)))
                {
                    bail!(InvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions");
                }
            }
        }
        let proj: Vec<Expr> = proj
            .into_iter()
            .map(|e| if e.ty() == SqlType::Unknown && !untyped_output(&e) { super::coerce(e, SqlType::Text) } else { Ok(e) })
            .collect::<Result<_>>()?;
        plan = Plan::Project { input: Box::new(plan), exprs: proj, columns: out_cols.clone() };
        match &s.distinct {
            Some(ast::Distinct::Distinct) => plan = Plan::Distinct { input: Box::new(plan) },
            _ => {}
        }
        if !keys.is_empty() {
            plan = Plan::Sort { input: Box::new(plan), keys, fetch: None };
        }
        if !distinct_on_cols.is_empty() {
            // The first row of each key in ORDER BY order, as PostgreSQL.
            plan = Plan::DistinctOn { input: Box::new(plan), keys: distinct_on_cols };
        }
        if out_cols.len() > visible {
            let exprs = (0..visible).map(|i| Expr::Column { index: i, ty: out_cols[i].ty }).collect();
            plan = Plan::Project { input: Box::new(plan), exprs, columns: out_cols[..visible].to_vec() };
        }
        Ok(plan)
    }

    fn bind_where(&self, w: &ast::Expr, scope: &Scope) -> Result<Vec<Expr>> {
        let mut conj = Vec::new();
        split_and(w, &mut conj);
        conj.iter()
            .map(|c| {
                let b = self.bind_expr(c, scope, None)?;
                let b = super::coerce(b, SqlType::Bool)?;
                if b.ty() != SqlType::Bool {
                    bail!(DatatypeMismatch, "argument of WHERE must be type boolean, not type {}", b.ty());
                }
                Ok(b)
            })
            .collect()
    }

    /// Plan the FROM list with the WHERE conjuncts that can go below or
    /// into joins. Returns the plan and its columns in FROM order.
    fn plan_from(
        &self,
        from: &[ast::TableWithJoins],
        selection: Option<&ast::Expr>,
        outer: Option<&Scope>,
    ) -> Result<(Plan, Vec<PlanColumn>)> {
        if from.is_empty() {
            let plan = Plan::Values { rows: vec![vec![]], columns: vec![] };
            return Ok((plan, vec![]));
        }
        // PostgreSQL's checkNameSpaceConflicts: one name per relation at this level.
        let mut names = Vec::new();
        for twj in from {
            ref_names_of(twj, &mut names);
        }
        let mut seen = HashSet::new();
        for n in &names {
            if !seen.insert(n) {
                bail!(DuplicateAlias, "table name \"{}\" specified more than once", n.rsplit('.').next().unwrap_or(n));
            }
        }
        // Relations of the top-level inner-join group, and extra ON conditions.
        let mut rels: Vec<Rel> = Vec::new();
        let mut on_conds: Vec<(ast::Expr, usize)> = Vec::new(); // (condition, rels needed so far)
        for twj in from {
            let left_cols: Vec<PlanColumn> = rels.iter().flat_map(|r| r.columns.clone()).collect();
            let lateral = if rels.is_empty() { None } else { self.lateral_item(&twj.relation, &left_cols, None, outer)? };
            let mut cur = match lateral {
                Some(lat) => {
                    // Everything to the left, joined, feeds the item row by row.
                    let group: Vec<Rel> = rels.drain(..).collect();
                    let conds: Vec<ast::Expr> = on_conds.drain(..).map(|(e, _)| e).collect();
                    let left = self.join_group(group, &conds, None, outer)?;
                    lateral_rel(left, lat, false)
                }
                None => self.plan_factor(&twj.relation, outer)?,
            };
            let mut group_start = rels.len();
            let mut pending_inner = true;
            for j in &twj.joins {
                use ast::JoinOperator as J;
                let (kind, constraint) = match &j.join_operator {
                    J::Join(c) | J::Inner(c) => (JoinKind::Inner, Some(c)),
                    J::CrossJoin(c) => (JoinKind::Inner, Some(c)),
                    J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
                    J::Right(c) | J::RightOuter(c) => (JoinKind::Right, Some(c)),
                    J::FullOuter(c) => (JoinKind::Full, Some(c)),
                    _ => bail!(FeatureNotSupported, "join type is not supported"),
                };
                let merging = matches!(
                    constraint,
                    Some(ast::JoinConstraint::Using(_) | ast::JoinConstraint::UsingAlias(..) | ast::JoinConstraint::Natural)
                );
                let left_cols: Vec<PlanColumn> = rels.iter().flat_map(|r| r.columns.iter()).chain(&cur.columns).cloned().collect();
                let on = match constraint {
                    Some(ast::JoinConstraint::On(e)) => Some(e),
                    _ => None,
                };
                if let Some(lat) = self.lateral_item(&j.relation, &left_cols, on, outer)? {
                    if !matches!(kind, JoinKind::Inner | JoinKind::Left) {
                        return Err(err!(
                            InvalidColumnReference,
                            "invalid reference to FROM-clause entry for table \"{}\"",
                            lat.first_ref_qualifier(&left_cols)
                        )
                        .with_detail("The combining JOIN type must be INNER or LEFT for a LATERAL reference."));
                    }
                    if merging {
                        bail!(FeatureNotSupported, "USING and NATURAL joins with a LATERAL item are not supported");
                    }
                    // Everything to the left, joined, feeds the item row by row
                    // (the ON condition filters the item's rows of each).
                    rels.push(cur);
                    let group: Vec<Rel> = rels.drain(..).collect();
                    let conds: Vec<ast::Expr> = on_conds.drain(..).map(|(e, _)| e).collect();
                    let left = self.join_group(group, &conds, None, outer)?;
                    cur = lateral_rel(left, lat, kind == JoinKind::Left);
                    group_start = 0;
                    continue;
                }
                let right = self.plan_factor(&j.relation, outer)?;
                if kind == JoinKind::Inner && pending_inner && !merging {
                    // Flatten into the group.
                    rels.push(cur);
                    cur = right;
                    if let Some(ast::JoinConstraint::On(e)) = constraint {
                        on_conds.push((e.clone(), rels.len() + 1));
                    }
                    continue;
                }
                // An outer join: first join up what we have.
                pending_inner = false;
                let left = if rels.len() > group_start {
                    rels.push(cur);
                    let group: Vec<Rel> = rels.drain(group_start..).collect();
                    let conds: Vec<ast::Expr> = on_conds.drain(..).map(|(e, _)| e).collect();
                    self.join_group(group, &conds, None, outer)?
                } else {
                    cur
                };
                group_start = rels.len();
                let mut cols = left.columns.clone();
                cols.extend(right.columns.clone());
                let scope = Scope::new(cols.clone(), outer);
                {
                    let mut recs = super::srf::record_columns(&left.plan);
                    let nl = left.columns.len();
                    recs.extend(super::srf::record_columns(&right.plan).into_iter().map(|(i, f)| (nl + i, f)));
                    *scope.records.borrow_mut() = recs;
                }
                let nl = left.columns.len();
                let merged = match constraint {
                    Some(ast::JoinConstraint::Using(names) | ast::JoinConstraint::UsingAlias(names, _)) => {
                        let names: Vec<String> = names.iter().map(|n| object_name(n).map(|x| x.1)).collect::<Result<_>>()?;
                        Some(using_pairs(&names, &left.columns, &right.columns)?)
                    }
                    Some(ast::JoinConstraint::Natural) => {
                        let names: Vec<String> = left
                            .columns
                            .iter()
                            .filter(|c| !super::is_hidden(c) && right.columns.iter().any(|r| !super::is_hidden(r) && r.name == c.name))
                            .map(|c| c.name.clone())
                            .collect();
                        Some(using_pairs(&names, &left.columns, &right.columns)?)
                    }
                    _ => None,
                };
                let cond = match (constraint, &merged) {
                    (Some(ast::JoinConstraint::On(e)), _) => Some(super::coerce(self.bind_expr(e, &scope, None)?, SqlType::Bool)?),
                    (_, Some(pairs)) => {
                        let mut conj = Vec::new();
                        for (_, li, ri) in pairs {
                            let l = Expr::Column { index: *li, ty: cols[*li].ty };
                            let r = Expr::Column { index: nl + ri, ty: cols[nl + ri].ty };
                            conj.push(self.bind_binary(&ast::BinaryOperator::Eq, l, r)?);
                        }
                        if conj.is_empty() {
                            None
                        } else {
                            Some(and_all(conj))
                        }
                    }
                    _ => None,
                };
                let (lk, rk, residual) = split_equi(cond, nl);
                let out_cols: Vec<PlanColumn> = cols;
                let plan = Plan::Join {
                    left: Box::new(left.plan),
                    right: Box::new(right.plan),
                    kind,
                    on: lk.into_iter().zip(rk).collect(),
                    filter: residual,
                    columns: out_cols.clone(),
                };
                cur = match merged {
                    None => Rel { plan, columns: out_cols },
                    Some(pairs) => {
                        // `USING (a) AS x`: x.a names the merged column (and only those).
                        let alias = match constraint {
                            Some(ast::JoinConstraint::UsingAlias(_, a)) => Some(ident(a)),
                            _ => None,
                        };
                        self.merge_using(plan, out_cols, nl, kind, &pairs, alias)?
                    }
                };
            }
            rels.push(cur);
        }
        let conds: Vec<ast::Expr> = on_conds.into_iter().map(|(e, _)| e).collect();
        let rel = self.join_group(rels, &conds, selection, outer)?;
        Ok((rel.plan, rel.columns))
    }

    /// The output of a USING / NATURAL join: the merged columns first (the
    /// left one for inner and left joins, the right one for right joins,
    /// COALESCE of both for full joins, in their common type), then every
    /// input column, the merged ones hidden (reachable only as `t.col`).
    fn merge_using(
        &self,
        join: Plan,
        cols: Vec<PlanColumn>,
        nl: usize,
        kind: JoinKind,
        pairs: &[(String, usize, usize)],
        alias: Option<String>,
    ) -> Result<Rel> {
        let mut exprs = Vec::new();
        let mut out = Vec::new();
        for (name, li, ri) in pairs {
            let l = Expr::Column { index: *li, ty: cols[*li].ty };
            let r = Expr::Column { index: nl + ri, ty: cols[nl + ri].ty };
            let (l, r) = self.unify(l, r, "=")?;
            let e = match kind {
                JoinKind::Right => r,
                JoinKind::Full => self.call("coalesce", vec![l, r])?,
                _ => l,
            };
            let mut c = PlanColumn::new(name.clone(), e.ty());
            c.qualifier = alias.clone();
            out.push(c);
            exprs.push(e);
        }
        for (i, c) in cols.iter().enumerate() {
            let mut c = c.clone();
            let merged = pairs.iter().any(|(_, li, ri)| if i < nl { *li == i } else { nl + ri == i });
            if merged {
                c.qualifier = super::hidden_qualifier(c.qualifier.as_deref());
            }
            exprs.push(Expr::Column { index: i, ty: c.ty });
            out.push(c);
        }
        Ok(Rel { plan: Plan::Project { input: Box::new(join), exprs, columns: out.clone() }, columns: out })
    }

    /// Join a group of relations with inner-join conditions: filters go
    /// below the joins, equalities become hash keys, greedy order.
    fn join_group(&self, rels: Vec<Rel>, on: &[ast::Expr], selection: Option<&ast::Expr>, outer: Option<&Scope>) -> Result<Rel> {
        let all_cols: Vec<PlanColumn> = rels.iter().flat_map(|r| r.columns.clone()).collect();
        let scope = Scope::new(all_cols.clone(), outer);
        {
            // Record columns of the relations, for `(t.col).field` in conditions.
            let mut at = 0;
            for r in &rels {
                let recs = super::srf::record_columns(&r.plan);
                scope.records.borrow_mut().extend(recs.into_iter().map(|(i, f)| (at + i, f)));
                at += r.columns.len();
            }
        }
        let mut conj: Vec<Expr> = Vec::new();
        for e in on {
            conj.extend(self.bind_where(e, &scope)?);
        }
        if let Some(w) = selection {
            conj.extend(self.bind_where(w, &scope)?.into_iter().filter(|c| !deferred(c)));
        }
        // Column ranges of each relation in the global layout.
        let mut starts = Vec::new();
        let mut s = 0;
        for r in &rels {
            starts.push(s);
            s += r.columns.len();
        }
        let rel_of = |col: usize| starts.iter().rposition(|&st| st <= col).unwrap();
        let rels_used = |e: &Expr| -> HashSet<usize> { e.columns_used().into_iter().map(rel_of).collect() };

        let mut rels: Vec<Option<Rel>> = rels.into_iter().map(Some).collect();
        let mut pending: Vec<(Expr, HashSet<usize>)> = Vec::new();
        // Push single-relation conditions down.
        for c in conj {
            let used = rels_used(&c);
            if used.len() == 1 {
                let r = *used.iter().next().unwrap();
                let st = starts[r];
                let local = c.remap_columns(&|i| i - st);
                let rel = rels[r].take().unwrap();
                let plan = Plan::Filter { input: Box::new(rel.plan), predicate: local };
                rels[r] = Some(Rel { plan, columns: rel.columns });
            } else {
                pending.push((c, used));
            }
        }
        let n = rels.len();
        // Greedy: start with the first relation.
        let first = rels[0].take().unwrap();
        let mut order: Vec<usize> = vec![0];
        let mut layout: Vec<usize> = (starts[0]..starts[0] + first.columns.len()).collect(); // layout[k] = global col
        let mut cur_plan = first.plan;
        let mut cur_cols = first.columns;
        let mut joined: HashSet<usize> = [0].into_iter().collect();
        while order.len() < n {
            // Prefer a relation linked by an equality to what is joined.
            let pick = (0..n)
                .filter(|r| rels[*r].is_some())
                .find(|r| {
                    pending.iter().any(|(c, used)| used.contains(r) && used.iter().all(|u| *u == *r || joined.contains(u)) && is_equi(c))
                })
                .unwrap_or_else(|| (0..n).find(|r| rels[*r].is_some()).unwrap());
            let right = rels[pick].take().unwrap();
            let mut new_joined = joined.clone();
            new_joined.insert(pick);
            let nl = layout.len();
            let right_global: Vec<usize> = (starts[pick]..starts[pick] + right.columns.len()).collect();
            let mut new_layout = layout.clone();
            new_layout.extend(&right_global);
            let pos_of = |g: usize| new_layout.iter().position(|&x| x == g).unwrap();
            let mut lk = Vec::new();
            let mut rk = Vec::new();
            let mut residual = Vec::new();
            let mut still = Vec::new();
            for (c, used) in pending.drain(..) {
                if used.iter().all(|u| new_joined.contains(u)) {
                    let local = c.remap_columns(&pos_of);
                    if let Some((l, r)) = equi_sides(&local, nl) {
                        lk.push(l);
                        rk.push(r.remap_columns(&|i| i - nl));
                    } else {
                        residual.push(local);
                    }
                } else {
                    still.push((c, used));
                }
            }
            pending = still;
            let mut cols = cur_cols.clone();
            cols.extend(right.columns.clone());
            cur_plan = Plan::Join {
                left: Box::new(cur_plan),
                right: Box::new(right.plan),
                kind: JoinKind::Inner,
                on: lk.into_iter().zip(rk).collect(),
                filter: if residual.is_empty() { None } else { Some(and_all(residual)) },
                columns: cols.clone(),
            };
            cur_cols = cols;
            layout = new_layout;
            joined = new_joined;
            order.push(pick);
        }
        // Conditions with no columns at all (constants, outer references).
        if !pending.is_empty() {
            let pos_of = |g: usize| layout.iter().position(|&x| x == g).unwrap();
            let rest: Vec<Expr> = pending.into_iter().map(|(c, _)| c.remap_columns(&pos_of)).collect();
            cur_plan = Plan::Filter { input: Box::new(cur_plan), predicate: and_all(rest) };
        }
        // Restore FROM order.
        let identity = layout.iter().enumerate().all(|(i, g)| i == *g);
        if !identity {
            let exprs: Vec<Expr> = (0..all_cols.len())
                .map(|g| {
                    let p = layout.iter().position(|&x| x == g).unwrap();
                    Expr::Column { index: p, ty: all_cols[g].ty }
                })
                .collect();
            cur_plan = Plan::Project { input: Box::new(cur_plan), exprs, columns: all_cols.clone() };
        }
        Ok(Rel { plan: cur_plan, columns: all_cols })
    }

    /// A FROM item that reads columns of the items to its left (`left`):
    /// a `LATERAL (subquery)`, or a function call (PostgreSQL's functions
    /// in FROM are lateral). Its plan addresses them as outer references
    /// (depth 1); `on` (an ON condition over both sides) becomes a filter of
    /// its rows. None when the item reads nothing of `left`.
    fn lateral_item(&self, f: &TableFactor, left: &[PlanColumn], on: Option<&ast::Expr>, outer: Option<&Scope>) -> Result<Option<Lateral>> {
        let may = match f {
            TableFactor::Derived { lateral, .. } => *lateral,
            TableFactor::Table { args: Some(_), .. } | TableFactor::UNNEST { .. } | TableFactor::Function { .. } => true,
            _ => false,
        };
        if !may || left.is_empty() {
            return Ok(None);
        }
        let scope = Scope::new(left.to_vec(), outer);
        let rel = self.plan_factor(f, Some(&scope))?;
        if scope.outer_refs.borrow().is_empty() {
            return Ok(None);
        }
        let mut plan = rel.plan;
        let mut columns = rel.columns;
        if columns.iter().any(|c| c.ty == SqlType::Unknown) {
            // Untyped literals come out as text, as in a select list.
            let exprs = columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let x = Expr::Column { index: i, ty: c.ty };
                    if c.ty == SqlType::Unknown {
                        super::coerce(x, SqlType::Text)
                    } else {
                        Ok(x)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            for c in columns.iter_mut() {
                if c.ty == SqlType::Unknown {
                    c.ty = SqlType::Text;
                }
            }
            plan = Plan::Project { input: Box::new(plan), exprs, columns: columns.clone() };
        }
        if let Some(e) = on {
            let cscope = Scope::new(columns.clone(), Some(&scope));
            let c = super::coerce(self.bind_expr(e, &cscope, None)?, SqlType::Bool)?;
            if c.ty() != SqlType::Bool {
                bail!(DatatypeMismatch, "argument of JOIN/ON must be type boolean, not type {}", c.ty());
            }
            plan = Plan::Filter { input: Box::new(plan), predicate: c };
        }
        let refs = scope.outer_refs.borrow().clone();
        Ok(Some(Lateral { plan, columns, refs }))
    }

    /// A FROM item's columns (names and types, `*`'s columns only), for
    /// the view deparser.
    /// The columns a GROUP BY of one table's primary key groups too: the
    /// table's other columns, once every key column is grouped (a plain
    /// table's PRIMARY KEY, its `_pkey` index; FROM a single table only).
    fn dependent_group_columns(&self, twj: &ast::TableWithJoins, columns: &[PlanColumn], group_by: &[Expr]) -> Vec<Expr> {
        let TableFactor::Table { name, args: None, .. } = &twj.relation else { return vec![] };
        if !twj.joins.is_empty() || group_by.is_empty() {
            return vec![];
        }
        let Some((db, rel)) = super::relation(self.catalog, &self.database, name).ok().and_then(|r| Some((r.database().ok()?, r.name)))
        else {
            return vec![];
        };
        let Some(def) = self.catalog.table(&db, &rel) else { return vec![] };
        let Some(pk) = self.catalog.index(&db, &format!("{rel}_pkey")).filter(|i| i.table == rel && i.unique) else { return vec![] };
        let visible: Vec<usize> =
            (0..columns.len()).filter(|&i| !super::is_hidden(&columns[i]) && !super::is_system(&columns[i])).collect();
        if visible.len() != def.columns.len() {
            return vec![];
        }
        let grouped = |i: usize| group_by.iter().any(|g| matches!(g, Expr::Column { index, .. } if *index == i));
        if !pk.columns.iter().all(|c| def.column_index(c).is_some_and(|k| grouped(visible[k]))) {
            return vec![];
        }
        visible.iter().filter(|&&i| !grouped(i)).map(|&i| Expr::Column { index: i, ty: columns[i].ty }).collect()
    }

    pub(super) fn plan_factor_columns(&self, f: &TableFactor) -> Result<Vec<(String, SqlType)>> {
        let rel = self.plan_factor(f, None)?;
        Ok(rel.columns.iter().filter(|c| !super::is_hidden(c)).map(|c| (c.name.clone(), c.ty)).collect())
    }

    fn plan_factor(&self, f: &TableFactor, outer: Option<&Scope>) -> Result<Rel> {
        match f {
            TableFactor::Table { name, alias, args: Some(args), with_ordinality: false, .. }
                if crate::exec::plan::SrfKind::from_name(&object_name(name)?.1).is_none() && !self.user_functions(name).is_empty() =>
            {
                // A user-defined function (`function.rs`).
                let mut asts = Vec::new();
                let mut names = Vec::new();
                for a in &args.args {
                    let (n, e) = match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => (None, e),
                        ast::FunctionArg::Named { name: n, arg: ast::FunctionArgExpr::Expr(e), .. }
                        | ast::FunctionArg::ExprNamed { name: ast::Expr::Identifier(n), arg: ast::FunctionArgExpr::Expr(e), .. } => {
                            (Some(ident(n)), e)
                        }
                        _ => bail!(FeatureNotSupported, "unsupported argument of {}", object_name(name)?.1),
                    };
                    names.push(n);
                    asts.push(e.clone());
                }
                let fname = object_name(name)?.1;
                let (plan, columns) =
                    self.plan_user_function_in_from(&fname, self.user_functions(name), alias.as_ref(), &asts, &names, outer)?;
                Ok(Rel { plan, columns })
            }
            TableFactor::Table { name, alias, args: Some(args), with_ordinality, .. }
                if *with_ordinality || object_name(name)?.1 != "generate_series" =>
            {
                let mut asts = Vec::new();
                for a in &args.args {
                    let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                        bail!(FeatureNotSupported, "unsupported argument of {}", object_name(name)?.1)
                    };
                    asts.push(e.clone());
                }
                self.plan_function_in_from(&object_name(name)?.1, alias.as_ref(), &asts, *with_ordinality, outer)
            }
            TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_ordinality, .. } if array_exprs.len() == 1 => {
                self.plan_function_in_from("unnest", alias.as_ref(), array_exprs, *with_ordinality, outer)
            }
            TableFactor::Table { name, alias, args: Some(args), .. } => {
                let (_, fname) = object_name(name)?;
                if fname != "generate_series" {
                    bail!(FeatureNotSupported, "table function {fname} is not supported");
                }
                let scope = Scope::new(vec![], outer);
                let mut asts = Vec::new();
                let mut bound = Vec::new();
                for a in &args.args {
                    let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                        bail!(FeatureNotSupported, "unsupported generate_series argument")
                    };
                    asts.push(e.clone());
                    bound.push(self.bind_expr(e, &scope, None)?);
                }
                // Timestamps and numerics go the general set-returning way.
                if bound.iter().any(|b| !b.ty().is_integer() && b.ty() != SqlType::Unknown) {
                    return self.plan_function_in_from(&fname, alias.as_ref(), &asts, false, outer);
                }
                // PostgreSQL's generate_series(int4, int4) is a set of int4;
                // with a bigint argument, of bigint. The series itself counts
                // in bigint.
                let ty = if bound.iter().any(|b| b.ty() == SqlType::Int8) { SqlType::Int8 } else { SqlType::Int4 };
                let exprs = bound.into_iter().map(|b| super::coerce(b, SqlType::Int8)).collect::<Result<Vec<_>>>()?;
                if !(2..=3).contains(&exprs.len()) {
                    bail!(UndefinedFunction, "function generate_series needs 2 or 3 arguments");
                }
                let qual = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| fname.clone());
                let col_name = alias.as_ref().and_then(|a| a.columns.first()).map(|c| ident(&c.name)).unwrap_or_else(|| qual.clone());
                let wide = vec![PlanColumn { name: col_name, qualifier: Some(qual), ty: SqlType::Int8 }];
                let series = Plan::Series { args: exprs, columns: wide.clone() };
                if ty == SqlType::Int8 {
                    return Ok(Rel { plan: series, columns: wide });
                }
                let cols = vec![PlanColumn { ty, ..wide[0].clone() }];
                let narrow = Expr::Cast { expr: Box::new(Expr::Column { index: 0, ty: SqlType::Int8 }), ty };
                Ok(Rel { plan: Plan::Project { input: Box::new(series), exprs: vec![narrow], columns: cols.clone() }, columns: cols })
            }
            TableFactor::Table { name, alias, inheritance, .. } => {
                let rel = self.lookup(name)?;
                let only = matches!(inheritance, Some(ast::TableInheritance::Only { .. }));
                let qual = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| rel.name.clone());
                let found = if rel.written_schema.is_none() { self.plan_cte(&rel.name, outer)? } else { None };
                let (plan, mut cols) = match found {
                    Some(cte) => cte,
                    None => self.plan_relation_only(&rel, only)?,
                };
                for c in cols.iter_mut() {
                    c.qualifier = if super::is_system(c) { super::system_qualifier(Some(&qual)) } else { Some(qual.clone()) };
                }
                if let Some(a) = alias {
                    too_many_aliases(a, &cols)?;
                    for (c, ac) in cols.iter_mut().zip(&a.columns) {
                        c.name = ident(&ac.name);
                    }
                }
                Ok(Rel { plan, columns: cols })
            }
            TableFactor::Derived { subquery, alias, .. } => {
                let plan = self.plan_query(subquery, outer)?;
                let qual = alias.as_ref().map(|a| ident(&a.name));
                let mut cols: Vec<PlanColumn> = plan.columns().to_vec();
                for c in cols.iter_mut() {
                    c.qualifier = qual.clone();
                }
                if let Some(a) = alias {
                    too_many_aliases(a, &cols)?;
                    for (c, ac) in cols.iter_mut().zip(&a.columns) {
                        c.name = ident(&ac.name);
                    }
                }
                Ok(Rel { plan, columns: cols })
            }
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let (mut plan, mut cols) = self.plan_from(std::slice::from_ref(table_with_joins), None, outer)?;
                if let Some(a) = alias {
                    // The alias hides the tables inside: their columns merged by
                    // USING / NATURAL go, the rest are `alias.col` (renamed by a column list).
                    if cols.iter().any(super::is_hidden) {
                        let keep: Vec<usize> = (0..cols.len()).filter(|&i| !super::is_hidden(&cols[i])).collect();
                        let exprs = keep.iter().map(|&i| Expr::Column { index: i, ty: cols[i].ty }).collect();
                        cols = keep.iter().map(|&i| cols[i].clone()).collect();
                        plan = Plan::Project { input: Box::new(plan), exprs, columns: cols.clone() };
                    }
                    for c in cols.iter_mut() {
                        c.qualifier = Some(ident(&a.name));
                    }
                    for (c, ac) in cols.iter_mut().zip(&a.columns) {
                        c.name = ident(&ac.name);
                    }
                    if a.columns.len() > cols.len() {
                        bail!(
                            InvalidColumnReference,
                            "join expression \"{}\" has {} columns available but {} columns specified",
                            ident(&a.name),
                            cols.len(),
                            a.columns.len()
                        );
                    }
                }
                Ok(Rel { plan, columns: cols })
            }
            // `LATERAL f(…)`: the same as `f(…)`, which is lateral anyway.
            TableFactor::Function { name, args, with_ordinality, alias, .. } => {
                let table = TableFactor::Table {
                    name: name.clone(),
                    alias: alias.clone(),
                    args: Some(ast::TableFunctionArgs { args: args.clone(), settings: None }),
                    with_hints: vec![],
                    version: None,
                    with_ordinality: *with_ordinality,
                    partitions: vec![],
                    json_path: None,
                    sample: None,
                    index_directives: vec![],
                    inheritance: None,
                };
                self.plan_factor(&table, outer)
            }
            other => bail!(FeatureNotSupported, "FROM item {other} is not supported"),
        }
    }

    /// A table, view or system table by name.
    /// A set-returning function in FROM (`unnest(a) [WITH ORDINALITY] AS
    /// t(x, n)`, `generate_series(...) WITH ORDINALITY`, …): a ProjectSet
    /// over one empty row. `unnest … WITH ORDINALITY` is `_pg_expandarray`'s
    /// (element, position) pairs.
    fn plan_function_in_from(
        &self,
        fname: &str,
        alias: Option<&ast::TableAlias>,
        asts: &[ast::Expr],
        ordinality: bool,
        outer: Option<&Scope>,
    ) -> Result<Rel> {
        let fname = fname.to_string();
        let scope = Scope::new(vec![], outer);
        // regexp_matches / regexp_split_to_table: an unnest of their helper's array.
        let regexp = match fname.as_str() {
            "regexp_matches" | "regexp_split_to_table" => {
                let bound: Vec<Expr> = asts.iter().map(|e| self.bind_expr(e, &scope, None)).collect::<Result<_>>()?;
                self.bind_regexp_srf(&fname, bound)?
            }
            _ => None,
        };
        let kind = match (&regexp, crate::exec::plan::SrfKind::from_name(&fname)) {
            (Some(_), _) => crate::exec::plan::SrfKind::Unnest,
            (None, Some(k)) => k,
            (None, None) => bail!(FeatureNotSupported, "table function {fname} is not supported"),
        };
        let marker = match regexp {
            Some(m) => m,
            None => {
                let bound: Vec<Expr> = asts.iter().map(|e| self.bind_expr(e, &scope, None)).collect::<Result<_>>()?;
                self.bind_srf(kind, asts, &scope, bound)?
            }
        };
        let unit = Plan::Values { rows: vec![vec![]], columns: vec![] };
        let (plan, value_ty) = match (kind, ordinality) {
            (crate::exec::plan::SrfKind::Unnest, true) => {
                let Expr::Func { args, ty, .. } = &marker else { unreachable!() };
                let ty = *ty;
                let e = self.bind_srf(crate::exec::plan::SrfKind::ExpandArray, asts, &scope, args.clone())?;
                (super::srf::project_set(unit, &mut [&mut vec![e]])?, ty)
            }
            _ => {
                let ty = marker.ty();
                (super::srf::project_set(unit, &mut [&mut vec![marker]])?, ty)
            }
        };
        let srf_cols = plan.columns().to_vec();
        let first = if ordinality {
            // The pair's element column is text; cast it to the element type.
            let x = Expr::Column { index: 0, ty: SqlType::Unknown };
            if value_ty == SqlType::Unknown {
                x
            } else {
                super::coerce(x, value_ty)?
            }
        } else {
            Expr::Column { index: 0, ty: value_ty }
        };
        let mut exprs = vec![first];
        if ordinality {
            exprs.push(match srf_cols.len() {
                // unnest: the position column of the (x, n) pair.
                2 => Expr::Column { index: 1, ty: SqlType::Int4 },
                _ => bail!(FeatureNotSupported, "WITH ORDINALITY is supported for unnest only"),
            });
        }
        if kind == crate::exec::plan::SrfKind::ExpandArray {
            bail!(FeatureNotSupported, "table function {fname} is not supported");
        }

        let qual = alias.map(|a| ident(&a.name)).unwrap_or_else(|| fname.clone());
        let names: Vec<String> = exprs
            .iter()
            .enumerate()
            .map(|(i, _)| {
                alias.and_then(|a| a.columns.get(i)).map(|c| ident(&c.name)).unwrap_or_else(|| {
                    if i == 0 {
                        // A function's single column is named after the alias (or the function).
                        qual.clone()
                    } else {
                        "ordinality".to_string()
                    }
                })
            })
            .collect();
        let cols: Vec<PlanColumn> =
            exprs.iter().zip(names).map(|(e, n)| PlanColumn { name: n, qualifier: Some(qual.clone()), ty: e.ty() }).collect();
        let plan = Plan::Project { input: Box::new(plan), exprs, columns: cols.clone() };
        Ok(Rel { plan, columns: cols })
    }

    pub fn plan_table(&self, schema: Option<&str>, name: &str) -> Result<(Plan, Vec<PlanColumn>)> {
        let rel = super::Relation {
            written_schema: schema.map(str::to_string),
            schema: super::resolve_schema(self.catalog, &self.database, schema),
            name: name.to_string(),
        };
        self.plan_relation(&rel)
    }

    /// A resolved relation: a table or view of a database (`db.t` for
    /// another database's), or a system table.
    pub fn plan_relation(&self, rel: &super::Relation) -> Result<(Plan, Vec<PlanColumn>)> {
        self.plan_relation_only(rel, false)
    }

    /// A relation; a table's descendants by inheritance too unless `only`
    /// (`FROM ONLY t`).
    pub fn plan_relation_only(&self, rel: &super::Relation, only: bool) -> Result<(Plan, Vec<PlanColumn>)> {
        let name = rel.name.as_str();
        if rel.written_schema.is_none() {
            if let Some(found) = self.plan_cte(name, None)? {
                return Ok(found);
            }
            if let Some((_, cols, batches)) = self.materialized.iter().rev().find(|(n, _, _)| n == name) {
                if cols.is_empty() {
                    bail!(FeatureNotSupported, "WITH query \"{name}\" does not have a RETURNING clause");
                }
                let plan = Plan::Memory { name: name.to_string(), batches: batches.clone(), columns: cols.clone() };
                return Ok((plan, cols.clone()));
            }
            let computed = self.computed_ctes.borrow().iter().rev().find(|(n, _, _)| n == name).cloned();
            if let Some((name, batches, columns)) = computed {
                return Ok((Plan::Memory { name, batches, columns: columns.clone() }, columns));
            }
        }
        let db = match &rel.schema {
            Some(super::SchemaRef::System(s)) => return super::system::system_table(self, s, name),
            Some(super::SchemaRef::Database(db)) => db.as_str(),
            None => bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display()),
        };
        if let Some(def) = self.catalog.table(db, name) {
            if let Some(role) = self.check_as.borrow().as_deref() {
                self.catalog.check_relation(role, db, name, "table", crate::catalog::acl::SELECT)?;
            }
            let (plan, cols) = if !def.partition.is_none() {
                self.plan_partitioned(&def)?
            } else {
                match self.descendants(&def) {
                    d if !only && !d.is_empty() => self.plan_inherited(&def, d)?,
                    _ => self.table_scan(&def)?,
                }
            };
            // Row-level security: only the rows the user's policies let through.
            return Ok(match self.policy_filter(&def, super::row_security::PolicyCommand::Select)? {
                Some(predicate) => (Plan::Filter { input: Box::new(plan), predicate }, cols),
                None => (plan, cols),
            });
        }
        self.plan_view_or_system(rel, db, name)
    }

    /// A table's scan (a partitioned table's regions are its leaves').
    pub(super) fn table_scan(&self, def: &crate::catalog::TableDef) -> Result<(Plan, Vec<PlanColumn>)> {
        let def = def.clone();
        let regions = self.regions(&def)?;
        let cols: Vec<PlanColumn> = def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: None, ty: c.ty }).collect();
        let mut seqs = Vec::new();
        if let Some(keys) = self.incremental.as_ref().filter(|k| k.sink_table_id != Some(def.id)) {
            for r in &regions {
                let b = keys.bounds(r.id, r.last_seq(), &def.name)?;
                self.watermarks.borrow_mut().push((r.id, b.upto.unwrap_or(0)));
                seqs.push(b);
            }
        }
        let plan = Plan::Scan(Scan {
            table: def.clone(),
            regions: crate::exec::plan::Regions(regions, seqs),
            projection: None,
            columns: cols.clone(),
            filters: vec![],
            time_range: None,
            tag_sets: vec![],
            last_row: false,
        });
        Ok((plan, cols))
    }

    fn plan_view_or_system(&self, rel: &super::Relation, db: &str, name: &str) -> Result<(Plan, Vec<PlanColumn>)> {
        if let Some(v) = self.catalog.view(db, name) {
            // restrict_nonsystem_relation_kind: every catalog view is a user's.
            let restricted = self.ctx.settings.get("restrict_nonsystem_relation_kind");
            if restricted.is_some_and(|kinds| kinds.split(',').any(|k| k.trim().trim_matches('\'').eq_ignore_ascii_case("view"))) {
                let shown = self.temp_names.iter().find(|(_, stored)| *stored == v.name).map_or(v.name.as_str(), |(user, _)| user.as_str());
                bail!(FeatureNotSupported, "access to non-system view \"{shown}\" is restricted");
            }
            let q = crate::parser::parse_query(&v.sql)?;
            // The view is read as the user; its relations as its owner.
            let body_role = match self.check_as.borrow().as_deref() {
                Some(role) => {
                    self.catalog.check_relation(role, db, name, "view", crate::catalog::acl::SELECT)?;
                    if v.security_invoker {
                        Some(role.to_string())
                    } else {
                        Some(self.catalog.owner_of(&crate::catalog::acl::AclObject::Relation(db.to_string(), name.to_string())))
                    }
                }
                None => None,
            };
            let plan = if db == self.database {
                let saved = self.check_as.replace(body_role);
                let r = self.plan_query(&q, None);
                self.check_as.replace(saved);
                r?
            } else {
                // Another database's view: its unqualified names are that
                // database's, so it is planned by a planner for it.
                let mut other = super::Planner::new(self.catalog, self.storage, db, self.ctx.clone(), Default::default());
                other.home = Some(self.home.clone().unwrap_or_else(|| self.database.clone()));
                other.incremental = self.incremental.clone();
                other.check_as = std::cell::RefCell::new(body_role);
                let plan = other.plan_query(&q, None)?;
                self.watermarks.borrow_mut().extend(other.watermarks.into_inner());
                plan
            };
            let mut cols: Vec<PlanColumn> = plan.columns().to_vec();
            for (c, n) in cols.iter_mut().zip(&v.columns) {
                c.name = n.clone();
            }
            return Ok((plan, cols));
        }
        if let Some(seq) = self.catalog.sequence(db, name) {
            // A sequence reads as its one row, as PostgreSQL's does (log_cnt: 0,
            // weir logs its values apart).
            if let Some(role) = self.check_as.borrow().as_deref() {
                self.catalog.check_relation(role, db, name, "sequence", crate::catalog::acl::SELECT)?;
            }
            let v = self.catalog.sequence_value(&seq);
            use crate::types::{SqlType as T, Value as V};
            return super::system::table(
                &[("last_value", T::Int8), ("log_cnt", T::Int8), ("is_called", T::Bool)],
                vec![vec![V::Int(v.last_value), V::Int(0), V::Bool(v.is_called)]],
            );
        }
        if rel.written_schema.is_none() {
            match super::system::system_table(self, "pg_catalog", name) {
                Ok(r) => return Ok(r),
                // e.g. permission denied for table pg_authid
                Err(e) if e.kind != crate::error::ErrorKind::UndefinedTable => return Err(e),
                Err(_) => {}
            }
        }
        bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display())
    }
}

/// An element of an array whose element type weir does not know (arrays are
/// text values): it stays untyped through projections so that comparisons
/// cast it, as `unnest(pg_index.indkey) = attnum` needs.
fn untyped_element(e: &Expr) -> bool {
    matches!(e, Expr::Column { ty: SqlType::Unknown, .. })
}

fn split_and(e: &ast::Expr, out: &mut Vec<ast::Expr>) {
    match e {
        ast::Expr::BinaryOp { left, op: ast::BinaryOperator::And, right } => {
            split_and(left, out);
            split_and(right, out);
        }
        ast::Expr::Nested(inner) if matches!(inner.as_ref(), ast::Expr::BinaryOp { op: ast::BinaryOperator::And, .. }) => {
            split_and(inner, out)
        }
        other => out.push(other.clone()),
    }
}

/// Conditions evaluated after the joins: subqueries, or no input columns.
fn deferred(c: &Expr) -> bool {
    c.has_subquery() || c.columns_used().is_empty()
}

pub fn and_all(mut v: Vec<Expr>) -> Expr {
    let first = v.remove(0);
    v.into_iter().fold(first, |acc, e| Expr::Binary { op: BinOp::And, left: Box::new(acc), right: Box::new(e), ty: SqlType::Bool })
}

fn is_equi(c: &Expr) -> bool {
    matches!(c, Expr::Binary { op: BinOp::Eq, .. })
}

/// `l = r` where l reads only columns < nl and r only columns >= nl.
fn equi_sides(c: &Expr, nl: usize) -> Option<(Expr, Expr)> {
    if let Expr::Binary { op: BinOp::Eq, left, right, .. } = c {
        let (lu, ru) = (left.columns_used(), right.columns_used());
        if lu.is_empty() || ru.is_empty() {
            return None;
        }
        if lu.iter().all(|&i| i < nl) && ru.iter().all(|&i| i >= nl) {
            return Some(((**left).clone(), (**right).clone()));
        }
        if ru.iter().all(|&i| i < nl) && lu.iter().all(|&i| i >= nl) {
            return Some(((**right).clone(), (**left).clone()));
        }
    }
    None
}

/// Split an outer join condition into hash keys and a residual.
/// (name, left index, right index) of each USING column: exactly one
/// visible column of that name on each side, as PostgreSQL requires.
fn using_pairs(names: &[String], left: &[PlanColumn], right: &[PlanColumn]) -> Result<Vec<(String, usize, usize)>> {
    let mut pairs: Vec<(String, usize, usize)> = Vec::new();
    for name in names {
        if pairs.iter().any(|(n, _, _)| n == name) {
            bail!(DuplicateColumn, "column name \"{name}\" appears more than once in USING clause");
        }
        let find = |cols: &[PlanColumn], side: &str| -> Result<usize> {
            let hits: Vec<usize> = (0..cols.len()).filter(|&i| cols[i].name == *name && !super::is_hidden(&cols[i])).collect();
            match hits[..] {
                [i] => Ok(i),
                [] => bail!(UndefinedColumn, "column \"{name}\" specified in USING clause does not exist in {side} table"),
                _ => bail!(AmbiguousColumn, "common column name \"{name}\" appears more than once in {side} table"),
            }
        };
        pairs.push((name.clone(), find(left, "left")?, find(right, "right")?));
    }
    Ok(pairs)
}

fn split_equi(cond: Option<Expr>, nl: usize) -> (Vec<Expr>, Vec<Expr>, Option<Expr>) {
    let Some(c) = cond else { return (vec![], vec![], None) };
    let mut parts = Vec::new();
    flatten_and(c, &mut parts);
    let (mut lk, mut rk, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for p in parts {
        if p.has_subquery() {
            rest.push(p);
            continue;
        }
        match equi_sides(&p, nl) {
            Some((l, r)) => {
                lk.push(l);
                rk.push(r.remap_columns(&|i| i - nl));
            }
            None => rest.push(p),
        }
    }
    (lk, rk, if rest.is_empty() { None } else { Some(and_all(rest)) })
}

fn flatten_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary { op: BinOp::And, left, right, .. } => {
            flatten_and(*left, out);
            flatten_and(*right, out);
        }
        other => out.push(other),
    }
}

fn contains_agg(e: &Expr) -> bool {
    let mut f = false;
    e.walk(&mut |x| f |= matches!(x, Expr::Agg(_)));
    f
}

fn contains_window(e: &Expr) -> bool {
    let mut f = false;
    e.walk(&mut |x| f |= matches!(x, Expr::Window(_)));
    f
}

/// Rewrite an expression over the aggregate's output: group expressions
/// become their column, aggregate calls their slot; stray columns are
/// errors. Expressions are matched structurally.
fn post_agg(e: &Expr, group_by: &[Expr], aggs: &[AggCall]) -> Result<Expr> {
    if let Some(k) = group_by.iter().position(|g| g == e) {
        return Ok(Expr::Column { index: k, ty: e.ty() });
    }
    match e {
        Expr::Agg(a) => {
            let k = aggs.iter().position(|c| c == a.as_ref()).expect("aggregate calls were collected from the same expressions");
            Ok(Expr::Column { index: group_by.len() + k, ty: a.ty })
        }
        Expr::Column { .. } => Err(err!(Grouping, "column must appear in the GROUP BY clause or be used in an aggregate function")),
        Expr::Subquery { correlated: true, .. } => {
            Err(err!(FeatureNotSupported, "correlated subqueries over grouped rows are not supported"))
        }
        other => {
            // Recurse one level at a time so nested group expressions match.
            let err_cell = std::cell::RefCell::new(None);
            let out = other.map(0, &|x, d| {
                if d > 0 || std::ptr::eq(x, other) {
                    return None;
                }
                match post_agg(x, group_by, aggs) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        err_cell.borrow_mut().get_or_insert(e);
                        Some(x.clone())
                    }
                }
            });
            match err_cell.into_inner() {
                Some(e) => Err(e),
                None => Ok(out),
            }
        }
    }
}

fn ordinal(v: &ast::Value, n: usize) -> Result<usize> {
    let ast::Value::Number(s, _) = v else { unreachable!() };
    let k: usize = s.parse().map_err(|_| err!(Syntax, "non-integer constant in ORDER BY"))?;
    if k == 0 || k > n {
        bail!(InvalidParameterValue, "position {k} is not in select list");
    }
    Ok(k - 1)
}

fn sort_key(expr: Expr, o: &ast::OrderByOptions) -> SortKey {
    let desc = matches!(o.sort, Some(ast::OrderBySort::Desc));
    let nulls_first = o.nulls_first.unwrap_or(desc);
    SortKey { expr, desc, nulls_first }
}

/// PostgreSQL's output column name for an expression.
pub fn output_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident(i),
        ast::Expr::CompoundIdentifier(p) => p.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default(),
        ast::Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => output_name(expr),
            _ => data_type
                .to_string()
                .to_lowercase()
                .split('(')
                .next()
                .unwrap_or("?column?")
                .to_string()
                .replace("integer", "int4")
                .replace("bigint", "int8")
                .replace("smallint", "int2")
                .replace("double precision", "float8")
                .replace("real", "float4")
                .replace("boolean", "bool"),
        },
        ast::Expr::Nested(inner) => output_name(inner),
        // `time '10:00'`: the type's name, as for a cast (FigureColname).
        ast::Expr::TypedString(ts) => match super::bind::sql_type(&ts.data_type) {
            Ok(SqlType::Time) => "time".into(),
            Ok(SqlType::TimeTz) => "timetz".into(),
            Ok(SqlType::Timestamp) => "timestamp".into(),
            Ok(SqlType::TimestampTz) => "timestamptz".into(),
            Ok(SqlType::Date) => "date".into(),
            Ok(SqlType::Interval) => "interval".into(),
            _ => "?column?".into(),
        },
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(e)) => output_name(e),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// Cast a plan's output columns to the given types.
fn cast_columns(plan: Plan, types: &[SqlType]) -> Result<Plan> {
    let cols = plan.columns().to_vec();
    if cols.iter().zip(types).all(|(c, t)| c.ty == *t) {
        return Ok(plan);
    }
    let exprs =
        cols.iter().enumerate().map(|(i, c)| super::coerce(Expr::Column { index: i, ty: c.ty }, types[i])).collect::<Result<_>>()?;
    let columns = cols.iter().zip(types).map(|(c, t)| PlanColumn { name: c.name.clone(), qualifier: None, ty: *t }).collect();
    Ok(Plan::Project { input: Box::new(plan), exprs, columns })
}

/// PostgreSQL's 42P10 for more column aliases than the relation has columns.
fn too_many_aliases(a: &ast::TableAlias, cols: &[PlanColumn]) -> Result<()> {
    let available = cols.iter().filter(|c| !super::is_system(c)).count();
    if a.columns.len() > available {
        bail!(
            InvalidColumnReference,
            "table \"{}\" has {} columns available but {} columns specified",
            ident(&a.name),
            available,
            a.columns.len()
        );
    }
    Ok(())
}

/// What a name in `FOR UPDATE OF name` may denote (PostgreSQL's range table entries).
#[derive(Clone, Copy, PartialEq)]
enum LockTarget {
    Relation,
    Subquery,
    Join,
    Function,
    Values,
}

/// Every range-table name of a FROM item for `FOR UPDATE OF`: relations and subqueries by
/// alias or name, joins by alias (or USING alias), also inside aliased joins (PostgreSQL
/// looks at the whole range table of the level).
fn lock_names_of(twj: &ast::TableWithJoins, out: &mut Vec<(String, LockTarget)>) {
    fn factor(f: &TableFactor, out: &mut Vec<(String, LockTarget)>) {
        match f {
            TableFactor::Table { name, alias, .. } => out.push((
                match alias {
                    Some(a) => ident(&a.name),
                    None => name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default(),
                },
                LockTarget::Relation,
            )),
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let mut inner = Vec::new();
                lock_names_of(table_with_joins, &mut inner);
                if let Some(a) = alias {
                    // The alias names the join; a USING alias of that same join is not a name.
                    if let Some(ast::JoinConstraint::UsingAlias(_, u)) = table_with_joins.joins.last().and_then(|j| join_constraint(j)) {
                        let u = ident(u);
                        if let Some(at) = inner.iter().rposition(|(n, k)| *n == u && *k == LockTarget::Join) {
                            inner.remove(at);
                        }
                    }
                    out.push((ident(&a.name), LockTarget::Join));
                }
                out.extend(inner);
            }
            TableFactor::Derived { alias: Some(a), subquery, .. } => {
                let values = matches!(subquery.body.as_ref(), SetExpr::Values(_)) && subquery.with.is_none();
                out.push((ident(&a.name), if values { LockTarget::Values } else { LockTarget::Subquery }));
            }
            TableFactor::Function { alias: Some(a), .. }
            | TableFactor::TableFunction { alias: Some(a), .. }
            | TableFactor::UNNEST { alias: Some(a), .. } => out.push((ident(&a.name), LockTarget::Function)),
            _ => {}
        }
    }
    factor(&twj.relation, out);
    for j in &twj.joins {
        factor(&j.relation, out);
        if let Some(ast::JoinConstraint::UsingAlias(_, a)) = join_constraint(j) {
            out.push((ident(a), LockTarget::Join));
        }
    }
}

/// A join's ON / USING constraint, for the join kinds that have one.
fn join_constraint(j: &ast::Join) -> Option<&ast::JoinConstraint> {
    match &j.join_operator {
        ast::JoinOperator::Join(c)
        | ast::JoinOperator::Inner(c)
        | ast::JoinOperator::Left(c)
        | ast::JoinOperator::LeftOuter(c)
        | ast::JoinOperator::Right(c)
        | ast::JoinOperator::RightOuter(c)
        | ast::JoinOperator::FullOuter(c) => Some(c),
        _ => None,
    }
}

/// PostgreSQL's checks of a locking clause (`FOR UPDATE [OF …]`): where it may stand and
/// what its names denote. weir takes no row locks (every statement sees one snapshot and
/// writes are serialized per region), so a valid clause changes nothing else.
fn check_locking(q: &ast::Query, ctes: Vec<String>) -> Result<()> {
    let Some(first) = q.locks.first() else { return Ok(()) };
    let what = |l: &ast::LockClause| format!("FOR {}", l.lock_type);
    let SetExpr::Select(s) = q.body.as_ref() else {
        bail!(FeatureNotSupported, "{} is not allowed with UNION/INTERSECT/EXCEPT", what(first));
    };
    if s.distinct.is_some() {
        bail!(FeatureNotSupported, "{} is not allowed with DISTINCT clause", what(first));
    }
    if !matches!(&s.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty()) {
        bail!(FeatureNotSupported, "{} is not allowed with GROUP BY clause", what(first));
    }
    if s.having.is_some() {
        bail!(FeatureNotSupported, "{} is not allowed with HAVING clause", what(first));
    }
    let mut names = Vec::new();
    for twj in &s.from {
        lock_names_of(twj, &mut names);
    }
    for l in &q.locks {
        let Some(of) = &l.of else { continue };
        let [part] = of.0.as_slice() else {
            bail!(Syntax, "{} must specify unqualified relation names", what(l));
        };
        let name = part.as_ident().map(ident).unwrap_or_default();
        let kind = match names.iter().find(|(n, _)| *n == name) {
            Some((_, k)) => *k,
            None => bail!(UndefinedTable, "relation \"{name}\" in {} clause not found in FROM clause", what(l)),
        };
        let refused = match kind {
            LockTarget::Relation if ctes.contains(&name) => "a WITH query",
            LockTarget::Relation | LockTarget::Subquery => continue,
            LockTarget::Join => "a join",
            LockTarget::Function => "a function",
            LockTarget::Values => "VALUES",
        };
        bail!(FeatureNotSupported, "{} cannot be applied to {refused}", what(l));
    }
    Ok(())
}

/// The names a FROM item puts in its query level's namespace: each relation's alias or
/// (unaliased) its name with the schema written, a join's USING alias; an aliased nested
/// join hides the names inside it. A subquery or function without an alias adds none.
fn ref_names_of(twj: &ast::TableWithJoins, out: &mut Vec<String>) {
    fn factor(f: &TableFactor, out: &mut Vec<String>) {
        match f {
            TableFactor::Table { name, alias, .. } => out.push(match alias {
                Some(a) => ident(&a.name),
                None => name.0.iter().map(|p| p.as_ident().map(ident).unwrap_or_default()).collect::<Vec<_>>().join("."),
            }),
            TableFactor::NestedJoin { alias: Some(a), .. }
            | TableFactor::Derived { alias: Some(a), .. }
            | TableFactor::Function { alias: Some(a), .. }
            | TableFactor::UNNEST { alias: Some(a), .. } => out.push(ident(&a.name)),
            TableFactor::NestedJoin { table_with_joins, alias: None } => ref_names_of(table_with_joins, out),
            _ => {}
        }
    }
    factor(&twj.relation, out);
    for j in &twj.joins {
        factor(&j.relation, out);
        if let Some(ast::JoinConstraint::UsingAlias(_, a)) = join_constraint(j) {
            out.push(ident(a));
        }
    }
}
