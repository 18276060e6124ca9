//! A SELECT's `WINDOW name AS (...)` clause: every `OVER name` and `OVER (name ...)` of the
//! select list and ORDER BY is replaced by the window it names (PostgreSQL's copying rules:
//! a copy may add ORDER BY and a frame, never override PARTITION BY or an existing ORDER BY,
//! and may not copy a window that has a frame). Works on sqlparser's AST before binding;
//! imports only the AST, `parser` (the frame EXCLUDE marker) and `error`.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

use crate::error::{Result, WeirError};
use crate::{bail, err};

/// The select and ORDER BY with named windows written out; None when there is no WINDOW clause.
pub fn resolve(s: &ast::Select, order_by: &[ast::OrderByExpr]) -> Result<Option<(ast::Select, Vec<ast::OrderByExpr>)>> {
    if s.named_window.is_empty() {
        return Ok(None);
    }
    let mut defs: HashMap<String, ast::WindowSpec> = HashMap::new();
    for ast::NamedWindowDefinition(name, expr) in &s.named_window {
        let key = super::ident(name);
        if defs.contains_key(&key) {
            bail!(Windowing, "window \"{key}\" is already defined");
        }
        let spec = match expr {
            ast::NamedWindowExpr::NamedWindow(other) => lookup(&defs, other)?.clone(),
            ast::NamedWindowExpr::WindowSpec(spec) => copy(&defs, spec)?,
        };
        defs.insert(key, spec);
    }
    let mut sel = s.clone();
    sel.named_window.clear();
    let mut order = order_by.to_vec();
    let mut v = Substitute { defs: &defs, depth: 0, error: None };
    let _ = sel.projection.visit(&mut v);
    let _ = sel.having.visit(&mut v);
    let _ = order.visit(&mut v);
    if let Some(e) = v.error {
        return Err(e);
    }
    Ok(Some((sel, order)))
}

fn lookup<'a>(defs: &'a HashMap<String, ast::WindowSpec>, name: &ast::Ident) -> Result<&'a ast::WindowSpec> {
    let key = super::ident(name);
    defs.get(&key).ok_or_else(|| err!(UndefinedObject, "window \"{key}\" does not exist"))
}

/// `(base ORDER BY ... frame)`: the spec with its base window's clauses copied in.
fn copy(defs: &HashMap<String, ast::WindowSpec>, spec: &ast::WindowSpec) -> Result<ast::WindowSpec> {
    let Some(base_name) = &spec.window_name else { return Ok(spec.clone()) };
    let base = lookup(defs, base_name)?;
    let name = super::ident(base_name);
    // A frame's EXCLUDE marker travels with the frame (`parser::window_frame`).
    let (exclusion, own_partition) = crate::parser::frame_exclusion(&spec.partition_by);
    if !own_partition.is_empty() {
        bail!(Windowing, "cannot override PARTITION BY clause of window \"{name}\"");
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        bail!(Windowing, "cannot override ORDER BY clause of window \"{name}\"");
    }
    if base.window_frame.is_some() {
        bail!(Windowing, "cannot copy window \"{name}\" because it has a frame clause");
    }
    let mut partition_by = base.partition_by.clone();
    partition_by.extend(exclusion.map(crate::parser::marker_expr));
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by,
        order_by: if spec.order_by.is_empty() { base.order_by.clone() } else { spec.order_by.clone() },
        window_frame: spec.window_frame.clone(),
    })
}

/// Rewrites the OVER clauses of this select's own window calls (not those of subqueries,
/// which have their own WINDOW clauses).
struct Substitute<'a> {
    defs: &'a HashMap<String, ast::WindowSpec>,
    depth: usize,
    error: Option<WeirError>,
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        if self.depth > 0 || self.error.is_some() {
            return ControlFlow::Continue(());
        }
        if let ast::Expr::Function(f) = e {
            let resolved = match &f.over {
                Some(ast::WindowType::NamedWindow(name)) => Some(lookup(self.defs, name).cloned()),
                Some(ast::WindowType::WindowSpec(spec)) if spec.window_name.is_some() => Some(copy(self.defs, spec)),
                _ => None,
            };
            match resolved {
                Some(Ok(spec)) => f.over = Some(ast::WindowType::WindowSpec(spec)),
                Some(Err(err)) => self.error = Some(err),
                None => {}
            }
        }
        ControlFlow::Continue(())
    }
}
