//! WITH queries. Each reference to a WITH query is planned inline, with
//! only the WITH queries defined before it in scope (under WITH RECURSIVE,
//! the later queries of its list too, as PostgreSQL orders them by what they
//! read; a cycle between two of them is 0A000). A WITH RECURSIVE query
//! of the form `non-recursive-term UNION [ALL] recursive-term` whose
//! recursive term reads it becomes a `RecursiveUnion` over a `WorkTable`,
//! after PostgreSQL's checks (42P19: the recursive reference at most once,
//! not in the non-recursive term, a subquery, an outer join's nullable
//! side, INTERSECT ALL / EXCEPT, nor under an aggregate; 0A000 for ORDER
//! BY / LIMIT / OFFSET of a recursive query; 42804 when the recursive
//! term's types would change the anchor's).
//!
//! Part of the binder: imports what `select.rs` does, nothing of `sql` or
//! `server`.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlparser::ast::{self, SetExpr};

use super::logical::LogicalPlan as Plan;
use super::{ident, Planner, Scope};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::{JoinKind, PlanColumn, SetOpKind};
use crate::types::SqlType;
use crate::{bail, err};

/// A WITH query in scope.
#[derive(Debug, Clone)]
pub struct Cte {
    pub name: String,
    pub kind: CteKind,
}

#[derive(Debug, Clone)]
pub enum CteKind {
    /// A query planned at each reference; `recursive`: declared by WITH
    /// RECURSIVE, so it may read itself; `level`: how many queries enclose
    /// the WITH clause (its outer references resolve only where a reference
    /// sits at that same level).
    /// `search_cycle`: its SEARCH / CYCLE clauses (`search_cycle.rs`).
    /// `group`: the WITH list it belongs to ([`next_group`]), whose later
    /// queries a WITH RECURSIVE query also sees.
    Query {
        query: ast::Query,
        columns: Vec<String>,
        recursive: bool,
        level: usize,
        search_cycle: Option<crate::parser::SearchCycle>,
        group: usize,
    },
    /// While its recursive term is planned: the working table, and how
    /// many times the term read it.
    WorkTable { id: usize, columns: Vec<PlanColumn>, reads: usize },
    /// A part of a recursive query that may not read it: the error.
    Forbidden(String),
}

/// Working-table ids: unique in the process, so nested recursive queries
/// never share one.
static NEXT_WORK_TABLE: AtomicUsize = AtomicUsize::new(1);

/// WITH-list ids, unique in the process.
static NEXT_GROUP: AtomicUsize = AtomicUsize::new(1);

/// A new id for the queries of one WITH list ([`CteKind::Query`]'s `group`).
pub fn next_group() -> usize {
    NEXT_GROUP.fetch_add(1, Ordering::Relaxed)
}

/// For each query of a WITH list, the other queries of the list it reads
/// (relations named like them; a nested WITH of the same name is not told apart).
fn sibling_reads(with: &ast::With) -> Vec<Vec<usize>> {
    let names: Vec<String> = with.cte_tables.iter().map(|c| ident(&c.alias.name)).collect();
    with.cte_tables
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut reads = Vec::new();
            let _ = ast::visit_relations(&*c.query, |n| {
                if let [ast::ObjectNamePart::Identifier(id)] = n.0.as_slice() {
                    let n = ident(id);
                    if let Some(j) = names.iter().position(|x| *x == n) {
                        if j != i && !reads.contains(&j) {
                            reads.push(j);
                        }
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            reads
        })
        .collect()
}

/// The order WITH RECURSIVE's queries can be computed in: each after the
/// queries of the list it reads, otherwise as written. Two queries reading
/// each other (directly or through others) are PostgreSQL's 0A000.
pub fn recursive_with_order(with: &ast::With) -> Result<Vec<usize>> {
    let reads = sibling_reads(with);
    // 0: not seen, 1: on the path, 2: placed.
    let mut state = vec![0u8; reads.len()];
    let mut order = Vec::with_capacity(reads.len());
    for root in 0..reads.len() {
        if state[root] != 0 {
            continue;
        }
        // Depth-first without recursion: (query, next of its reads to visit).
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some(&mut (i, ref mut k)) = stack.last_mut() {
            if let Some(&j) = reads[i].get(*k) {
                *k += 1;
                match state[j] {
                    0 => {
                        state[j] = 1;
                        stack.push((j, 0));
                    }
                    1 => bail!(FeatureNotSupported, "mutual recursion between WITH items is not implemented"),
                    _ => {}
                }
            } else {
                state[i] = 2;
                order.push(i);
                stack.pop();
            }
        }
    }
    Ok(order)
}

/// How many queries enclose a query planned with `outer`.
fn level(outer: Option<&Scope>) -> usize {
    let mut n = 0;
    let mut s = outer;
    while let Some(x) = s {
        n += 1;
        s = x.parent;
    }
    n
}

/// The WITH query's plan with its column list's names; more names than columns is 42P10.
fn renamed(plan: Plan, names: &[String], cte: &str) -> Result<(Plan, Vec<PlanColumn>)> {
    let mut cols: Vec<PlanColumn> = plan.columns().to_vec();
    if names.len() > cols.len() {
        bail!(InvalidColumnReference, "WITH query \"{cte}\" has {} columns available but {} columns specified", cols.len(), names.len());
    }
    for (c, n) in cols.iter_mut().zip(names) {
        c.name = n.clone();
    }
    Ok((plan, cols))
}

/// Does `p` read the working table `id` (outside subquery expressions)?
fn reads_work_table(p: &Plan, id: usize) -> bool {
    matches!(p, Plan::WorkTable { id: w, .. } if *w == id) || p.inputs().iter().any(|c| reads_work_table(c, id))
}

/// How many times `p` reads the working table `id` (outside subquery
/// expressions).
fn work_table_nodes(p: &Plan, id: usize) -> usize {
    usize::from(matches!(p, Plan::WorkTable { id: w, .. } if *w == id)) + p.inputs().iter().map(|c| work_table_nodes(c, id)).sum::<usize>()
}

/// PostgreSQL's places a recursive reference may not be: the error, if
/// the recursive term reads its working table from one.
fn check_recursive_term(p: &Plan, id: usize, name: &str) -> Result<()> {
    let bad = |place: &str| err!(InvalidRecursion, "recursive reference to query \"{name}\" must not appear within {place}");
    match p {
        Plan::Join { left, right, kind, .. } => {
            let nullable_reads = match kind {
                JoinKind::Left | JoinKind::Anti => reads_work_table(right, id),
                JoinKind::Right => reads_work_table(left, id),
                JoinKind::Full => reads_work_table(left, id) || reads_work_table(right, id),
                JoinKind::Inner | JoinKind::Semi => false,
            };
            if nullable_reads {
                return Err(bad("an outer join"));
            }
        }
        Plan::SetOp { kind: SetOpKind::Intersect, all: true, .. } if reads_work_table(p, id) => return Err(bad("INTERSECT")),
        Plan::SetOp { left, right, kind: SetOpKind::Except, all } => {
            if reads_work_table(right, id) || (*all && reads_work_table(left, id)) {
                return Err(bad("EXCEPT"));
            }
        }
        Plan::Aggregate { input, aggs, .. } if !aggs.is_empty() && reads_work_table(input, id) => {
            bail!(InvalidRecursion, "aggregate functions are not allowed in a recursive query's recursive term");
        }
        _ => {}
    }
    p.inputs().iter().try_for_each(|c| check_recursive_term(c, id, name))
}

impl Planner<'_> {
    /// A query with a WITH clause: its queries are in scope by name while
    /// the body is planned.
    pub(super) fn plan_with(&self, q: &ast::Query, with: &ast::With, outer: Option<&Scope>) -> Result<Plan> {
        let depth = self.ctes.borrow().len();
        let r = self.push_ctes(with, level(outer)).and_then(|_| self.plan_query_body(q, outer));
        self.ctes.borrow_mut().truncate(depth);
        r
    }

    pub(super) fn push_ctes(&self, with: &ast::With, level: usize) -> Result<()> {
        if with.recursive {
            recursive_with_order(with)?;
        }
        let group = next_group();
        for cte in &with.cte_tables {
            let columns = cte.alias.columns.iter().map(|c| ident(&c.name)).collect();
            let search_cycle = crate::parser::cte_clauses(cte)?;
            if search_cycle.is_some() && !with.recursive {
                bail!(Syntax, "WITH query is not recursive");
            }
            let kind = CteKind::Query { query: (*cte.query).clone(), columns, recursive: with.recursive, level, search_cycle, group };
            self.ctes.borrow_mut().push(Cte { name: ident(&cte.alias.name), kind });
        }
        Ok(())
    }

    /// A reference to the WITH query `name`, innermost first (None: no
    /// WITH query has that name), from a FROM clause planned with `outer`.
    pub(super) fn plan_cte(&self, name: &str, outer: Option<&Scope>) -> Result<Option<(Plan, Vec<PlanColumn>)>> {
        let Some(i) = self.ctes.borrow().iter().rposition(|c| c.name == name) else { return Ok(None) };
        let kind = {
            let mut ctes = self.ctes.borrow_mut();
            match &mut ctes[i].kind {
                CteKind::WorkTable { id, columns, reads } => {
                    *reads += 1;
                    return Ok(Some((Plan::WorkTable { id: *id, columns: columns.clone() }, columns.clone())));
                }
                CteKind::Forbidden(msg) => bail!(InvalidRecursion, "{msg}"),
                k @ CteKind::Query { .. } => k.clone(),
            }
        };
        let CteKind::Query { query, columns, recursive, level: at, search_cycle, group } = kind else { unreachable!("matched above") };
        // The WITH query's own outer query, when the reference sees it: at
        // the WITH's level, or deeper (`(WITH c AS (VALUES (f1)) SELECT (SELECT
        // x FROM c))` — the outer column is then found through the scopes in
        // between, at the depth the reference's position gives it).
        let outer = outer.filter(|_| level(outer) >= at);
        let saved: Vec<Cte> = self.ctes.borrow_mut().drain(i..).collect();
        if recursive {
            // WITH RECURSIVE: the later queries of the same list are in scope
            // too (push_ctes refused cycles between them).
            let later = saved[1..].iter().filter(|c| matches!(c.kind, CteKind::Query { group: g, .. } if g == group));
            self.ctes.borrow_mut().extend(later.cloned());
        }
        let r = if recursive {
            self.plan_recursive(name, &query, &columns, outer, search_cycle.as_ref())
        } else {
            self.plan_query(&query, outer).and_then(|p| renamed(p, &columns, name))
        };
        self.ctes.borrow_mut().truncate(i);
        self.ctes.borrow_mut().extend(saved);
        r.map(Some)
    }

    /// `f` with `name` bound to `kind` (then unbound again).
    fn with_cte<T>(&self, name: &str, kind: CteKind, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.ctes.borrow_mut().push(Cte { name: name.to_string(), kind });
        let r = f();
        self.ctes.borrow_mut().pop();
        r
    }

    /// A WITH RECURSIVE query (its name and every later WITH query are out
    /// of scope here).
    fn plan_recursive(
        &self,
        name: &str,
        q: &ast::Query,
        names: &[String],
        outer: Option<&Scope>,
        sc: Option<&crate::parser::SearchCycle>,
    ) -> Result<(Plan, Vec<PlanColumn>)> {
        if sc.is_some() {
            super::search_cycle::terms(&q.body)?;
        }
        let SetExpr::SetOperation { op: ast::SetOperator::Union, set_quantifier, left, right } = q.body.as_ref() else {
            // Not of the recursive form: fine as long as it does not read itself.
            let msg = format!("recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term");
            return self.with_cte(name, CteKind::Forbidden(msg), || self.plan_query(q, outer)).and_then(|p| renamed(p, names, name));
        };
        // The query's own WITH clause is in scope in both terms, and its
        // queries see this one (as the working table in the recursive term).
        let base = self.ctes.borrow().len();
        let msg = format!("recursive reference to query \"{name}\" must not appear within its non-recursive term");
        self.ctes.borrow_mut().push(Cte { name: name.to_string(), kind: CteKind::Forbidden(msg) });
        let pushed = match &q.with {
            Some(w) => self.push_ctes(w, level(outer)),
            None => Ok(()),
        };
        let id = NEXT_WORK_TABLE.fetch_add(1, Ordering::Relaxed);
        let terms = pushed.and_then(|_| self.plan_set_expr(left, outer)).and_then(|anchor| {
            let (_, mut columns) = renamed(anchor.clone(), names, name)?;
            for c in columns.iter_mut() {
                c.qualifier = None;
            }
            let Some(sc) = sc else {
                self.ctes.borrow_mut()[base].kind = CteKind::WorkTable { id, columns: columns.clone(), reads: 0 };
                let rec = self.plan_set_expr(right, outer)?;
                return Ok((anchor, columns, rec));
            };
            // SEARCH / CYCLE: the added columns, hidden from `*` in the working table.
            let all: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
            super::search_cycle::check(sc, &all)?;
            let (anchor, columns) = self.search_cycle_anchor(anchor, &columns, sc)?;
            let mut work = columns.clone();
            for c in work.iter_mut().skip(all.len()) {
                c.qualifier = super::system_qualifier(None);
            }
            self.ctes.borrow_mut()[base].kind = CteKind::WorkTable { id, columns: work, reads: 0 };
            let right = self.search_cycle_recursive_select(right, name, sc)?;
            let rec = self.plan_set_expr(&right, outer)?;
            let rec = self.search_cycle_project(rec, &columns, sc)?;
            Ok((anchor, columns, rec))
        });
        let kind = self.ctes.borrow_mut()[base].kind.clone();
        self.ctes.borrow_mut().truncate(base);
        let (anchor, columns, rec) = terms?;
        let CteKind::WorkTable { reads, .. } = kind else { unreachable!("set before the recursive term") };
        if reads == 0 {
            if sc.is_some() {
                bail!(Syntax, "with a SEARCH or CYCLE clause, the query \"{name}\" must read itself");
            }
            // A plain UNION that happens to sit in WITH RECURSIVE.
            return self.plan_query(q, outer).and_then(|p| renamed(p, names, name));
        }
        if q.order_by.is_some() {
            bail!(FeatureNotSupported, "ORDER BY in a recursive query is not implemented");
        }
        match &q.limit_clause {
            Some(ast::LimitClause::LimitOffset { offset: Some(_), .. }) | Some(ast::LimitClause::OffsetCommaLimit { .. }) => {
                bail!(FeatureNotSupported, "OFFSET in a recursive query is not implemented")
            }
            Some(ast::LimitClause::LimitOffset { limit: Some(_), .. }) => {
                bail!(FeatureNotSupported, "LIMIT in a recursive query is not implemented")
            }
            _ => {}
        }
        if let SetExpr::Query(sub) = right.as_ref() {
            if sub.order_by.is_some() {
                bail!(FeatureNotSupported, "ORDER BY in a recursive query is not implemented");
            }
            if sub.limit_clause.is_some() {
                bail!(FeatureNotSupported, "LIMIT in a recursive query is not implemented");
            }
        }
        check_recursive_term(&rec, id, name)?;
        if work_table_nodes(&rec, id) < reads {
            bail!(InvalidRecursion, "recursive reference to query \"{name}\" must not appear within a subquery");
        }
        if reads > 1 {
            bail!(InvalidRecursion, "recursive reference to query \"{name}\" must not appear more than once");
        }
        let rec_cols = rec.columns().to_vec();
        if rec_cols.len() != columns.len() {
            bail!(Syntax, "each UNION query must have the same number of columns");
        }
        // The working table has the anchor's types: the recursive term's
        // columns are cast to them when the union's type is the anchor's.
        let mut cast = false;
        for (i, (a, r)) in columns.iter().zip(&rec_cols).enumerate() {
            if a.ty == r.ty || r.ty == SqlType::Unknown {
                cast |= a.ty != r.ty;
                continue;
            }
            match SqlType::common(a.ty, r.ty) {
                Some(t) if t == a.ty => cast = true,
                Some(t) => {
                    return Err(err!(
                        DatatypeMismatch,
                        "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                        i + 1,
                        a.ty,
                        t
                    )
                    .with_hint("Cast the output of the non-recursive term to the correct type."))
                }
                None => bail!(DatatypeMismatch, "UNION types {} and {} cannot be matched", a.ty, r.ty),
            }
        }
        let recursive = if cast {
            let exprs = rec_cols
                .iter()
                .zip(&columns)
                .enumerate()
                .map(|(i, (r, a))| {
                    let c = Expr::Column { index: i, ty: r.ty };
                    if r.ty == a.ty {
                        c
                    } else {
                        Expr::Cast { expr: Box::new(c), ty: a.ty }
                    }
                })
                .collect();
            Plan::Project { input: Box::new(rec), exprs, columns: columns.clone() }
        } else {
            rec
        };
        let all = matches!(set_quantifier, ast::SetQuantifier::All);
        let plan = Plan::RecursiveUnion { anchor: Box::new(anchor), recursive: Box::new(recursive), id, all, columns: columns.clone() };
        if sc.is_some_and(super::search_cycle::has_depth) {
            // The breadth-first depth only travels through the working table.
            let keep = columns.len() - 1;
            let exprs = (0..keep).map(|i| Expr::Column { index: i, ty: columns[i].ty }).collect();
            let cols = columns[..keep].to_vec();
            return Ok((Plan::Project { input: Box::new(plan), exprs, columns: cols.clone() }, cols));
        }
        Ok((plan, columns))
    }
}
