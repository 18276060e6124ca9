//! Rules (`CREATE [OR REPLACE] RULE name AS ON INSERT | UPDATE | DELETE TO t
//! [WHERE condition] DO [ALSO | INSTEAD] { NOTHING | command | (command; …) }`,
//! `DROP RULE`), and their application to the INSERT / UPDATE / DELETE
//! statements that write a table that has them (PostgreSQL's rewriter, at
//! execution time).
//!
//! How a statement with rules runs: the rows it would write are computed first
//! and kept as relations the rule actions read under the names `new` (INSERT,
//! UPDATE: the rows as written) and `old` (UPDATE, DELETE: the rows as they
//! were), with a row number joining the two (`?rule row?`). Each action is the
//! rule's statement with these relations added to its FROM (USING for DELETE,
//! a VALUES list becoming a SELECT) and the rule's condition to its WHERE, so it
//! runs once per row, as PostgreSQL's rewritten query does. Like PostgreSQL, an
//! UPDATE / DELETE rule action that mentions neither `old` nor `new`, of a
//! statement without WHERE, runs once. The statement itself runs unless an
//! unconditional DO INSTEAD rule replaces it; conditional DO INSTEAD rules leave
//! it the rows their conditions do not hold for. An INSERT runs before its rules'
//! actions, an UPDATE / DELETE after them. Data-modifying WITH queries take
//! only a single-statement unconditional DO INSTEAD rule (PostgreSQL's 0A000
//! errors otherwise). Rules on views (and ON SELECT rules) are not supported.
//!
//! Works on sqlparser's AST (the actions are kept as SQL and parsed again when
//! they run). Imports `sql` siblings, `planner` and `catalog`.

use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use sqlparser::ast::{self, Statement};

use super::{dml, QueryResult, Session};
use crate::catalog::{RuleDef, RuleEvent, TableDef};
use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::parser::Statement as WeirStatement;
use crate::planner::{ident, Params};
use crate::types::SqlType;
use crate::{bail, err};

/// The column joining `old` and `new` row by row.
const ROW: &str = "?rule row?";

/// Where the statement running now sits, for the rules it meets.
#[derive(Debug, Default, Clone)]
pub struct RuleContext {
    /// It is a data-modifying WITH query.
    pub in_with_query: bool,
    /// It is the main statement of a query with data-modifying WITH queries.
    pub under_modifying_with: bool,
    /// The (database, table) whose rules are being applied, outermost first.
    firing: Vec<(String, String)>,
}

/// One statement of SQL text (an action or condition kept in the catalog).
fn parse_one(sql: &str) -> Result<Statement> {
    match crate::parser::parse(sql)?.pop() {
        Some(WeirStatement::Sql(s)) => Ok(s),
        _ => bail!(Internal, "rule text is not a statement: {sql}"),
    }
}

fn parse_query(sql: &str) -> Result<ast::Query> {
    match parse_one(sql)? {
        Statement::Query(q) => Ok(*q),
        _ => bail!(Internal, "not a query: {sql}"),
    }
}

/// A rule's condition, from its text.
fn parse_condition(sql: &str) -> Result<ast::Expr> {
    let q = parse_query(&format!("SELECT {sql}"))?;
    match q.body.as_ref() {
        ast::SetExpr::Select(sel) => match sel.projection.first() {
            Some(ast::SelectItem::UnnamedExpr(e)) => Ok(e.clone()),
            _ => bail!(Internal, "rule condition is not an expression: {sql}"),
        },
        _ => bail!(Internal, "rule condition is not an expression: {sql}"),
    }
}

/// FROM items as the AST has them, from their text.
fn from_items(text: &str) -> Result<Vec<ast::TableWithJoins>> {
    let q = parse_query(&format!("SELECT 1 FROM {text}"))?;
    match *q.body {
        ast::SetExpr::Select(s) => Ok(s.from),
        _ => bail!(Internal, "not a SELECT"),
    }
}

fn and(a: Option<ast::Expr>, b: ast::Expr) -> ast::Expr {
    match a {
        None => b,
        Some(a) => ast::Expr::BinaryOp {
            left: Box::new(ast::Expr::Nested(Box::new(a))),
            op: ast::BinaryOperator::And,
            right: Box::new(ast::Expr::Nested(Box::new(b))),
        },
    }
}

/// Whether an expression or statement mentions `new` or `old` (`new.a`, `old`, `new.*`).
fn mentions_new_or_old<V: ast::Visit>(v: &V) -> bool {
    mentions_pseudo(v, &["new", "old"])
}

/// Whether `v` reads one of the pseudo-relations `names` (lowercase): `name.col`, `name`
/// or `name.*`.
fn mentions_pseudo<V: ast::Visit>(v: &V, names: &[&str]) -> bool {
    struct Finder<'a>(&'a [&'a str]);
    impl Finder<'_> {
        fn pseudo(&self, i: &ast::Ident) -> bool {
            i.quote_style.is_none() && self.0.contains(&i.value.to_lowercase().as_str())
        }
    }
    impl ast::Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            match e {
                ast::Expr::CompoundIdentifier(parts) if parts.first().is_some_and(|i| self.pseudo(i)) => ControlFlow::Break(()),
                ast::Expr::Identifier(i) if self.pseudo(i) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
        // `new.*` in a select list is no expression.
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            let ast::SetExpr::Select(s) = q.body.as_ref() else { return ControlFlow::Continue(()) };
            for item in &s.projection {
                if let ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) = item {
                    if matches!(n.0.as_slice(), [ast::ObjectNamePart::Identifier(i)] if self.pseudo(i)) {
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    v.visit(&mut Finder(names)).is_break()
}

fn event_of(stmt: &Statement) -> Option<RuleEvent> {
    Some(match stmt {
        Statement::Insert(_) => RuleEvent::Insert,
        Statement::Update(_) => RuleEvent::Update,
        Statement::Delete(_) => RuleEvent::Delete,
        _ => return None,
    })
}

/// CREATE [OR REPLACE] RULE.
pub fn create(s: &mut Session, r: &ast::CreateRule) -> Result<QueryResult> {
    let event = match r.event {
        ast::CreateRuleEvent::Select => bail!(FeatureNotSupported, "ON SELECT rules are not supported"),
        ast::CreateRuleEvent::Insert => RuleEvent::Insert,
        ast::CreateRuleEvent::Update => RuleEvent::Update,
        ast::CreateRuleEvent::Delete => RuleEvent::Delete,
    };
    let def = rule_table(s, &r.table_name)?;
    let actions: Vec<&Statement> = match &r.action {
        ast::CreateRuleAction::Nothing => vec![],
        ast::CreateRuleAction::Statement(st) => vec![st.as_ref()],
        ast::CreateRuleAction::Statements(v) => v.iter().collect(),
    };
    for a in &actions {
        match a {
            Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {}
            Statement::NOTIFY { .. } if r.condition.is_some() => {
                bail!(FeatureNotSupported, "rules with WHERE conditions can only have SELECT, INSERT, UPDATE, or DELETE actions")
            }
            Statement::NOTIFY { .. } => {}
            other => bail!(Syntax, "syntax error at or near \"{}\"", other.to_string().split_whitespace().next().unwrap_or("")),
        }
    }
    // NEW has no rows in a DELETE, OLD none in an INSERT.
    let pseudo = |name: &str| {
        let mut hit = false;
        let check = |e: &ast::Expr| {
            if let ast::Expr::CompoundIdentifier(p) = e {
                if p.first().is_some_and(|i| i.quote_style.is_none() && i.value.eq_ignore_ascii_case(name)) {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        };
        hit |= ast::visit_expressions(&r.condition, check).is_break();
        for a in &actions {
            hit |= ast::visit_expressions(*a, check).is_break();
        }
        hit
    };
    // A WITH query of an action is planned on its own: it cannot read OLD or NEW.
    for a in &actions {
        if let Statement::Query(q) = a {
            for cte in q.with.iter().flat_map(|w| &w.cte_tables) {
                for (name, upper) in [("old", "OLD"), ("new", "NEW")] {
                    if mentions_pseudo(&*cte.query, &[name]) {
                        bail!(FeatureNotSupported, "cannot refer to {upper} within WITH query");
                    }
                }
            }
        }
    }
    match event {
        RuleEvent::Insert if pseudo("old") => bail!(InvalidObjectDefinition, "ON INSERT rule cannot use OLD"),
        RuleEvent::Delete if pseudo("new") => bail!(InvalidObjectDefinition, "ON DELETE rule cannot use NEW"),
        _ => {}
    }
    let name = ident(&r.name);
    let cat = &s.engine.catalog;
    if !r.or_replace && cat.rules(&def.database, &def.name).iter().any(|x| x.name == name) {
        bail!(DuplicateObject, "rule \"{name}\" for relation \"{}\" already exists", def.name);
    }
    cat.put_rule(RuleDef {
        id: 0,
        database: def.database.clone(),
        table: def.name.clone(),
        name,
        event,
        instead: matches!(r.do_kind, Some(ast::CreateRuleDoKind::Instead)),
        condition: r.condition.as_ref().map(|c| c.to_string()),
        actions: actions.iter().map(|a| a.to_string()).collect(),
    })?;
    Ok(QueryResult::Command("CREATE RULE".into()))
}

/// DROP RULE [IF EXISTS] name ON t.
pub fn drop(s: &mut Session, r: &ast::DropRule) -> Result<QueryResult> {
    let done = Ok(QueryResult::Command("DROP RULE".into()));
    let def = match rule_table(s, &r.table_name) {
        Ok(d) => d,
        Err(_) if r.if_exists => return done,
        Err(e) => return Err(e),
    };
    let name = ident(&r.name);
    if s.engine.catalog.drop_rule(&def.database, &def.name, &name)?.is_none() && !r.if_exists {
        bail!(UndefinedObject, "rule \"{name}\" for relation \"{}\" does not exist", def.name);
    }
    done
}

/// The table a rule statement names (a view's rules are not supported).
fn rule_table(s: &Session, name: &ast::ObjectName) -> Result<TableDef> {
    let planner = s.planner(Params::default());
    match planner.table_named(name) {
        Ok(d) => Ok(d),
        Err(e) => {
            let r = planner.lookup(name)?;
            if let Some(crate::planner::SchemaRef::Database(db)) = &r.schema {
                if s.engine.catalog.view(db, &r.name).is_some() {
                    bail!(FeatureNotSupported, "rules on views are not supported");
                }
            }
            Err(e)
        }
    }
}

/// INSERT / UPDATE / DELETE: through the target's rules when it has some.
pub fn execute_dml(s: &mut Session, stmt: &Statement, params: Params) -> Result<QueryResult> {
    // Rules rewrite the statement's rows as AST: a scanned bulk INSERT's
    // other rows join its VALUES first.
    if let (Statement::Insert(ins), true) = (stmt, s.literal_rows.is_some() && s.engine.catalog.has_rules()) {
        if let Some(rows) = s.literal_rows.take() {
            return execute_dml(s, &Statement::Insert(dml::with_literal_rows(ins, &rows)), params);
        }
    }
    let Some(event) = event_of(stmt).filter(|_| s.engine.catalog.has_rules()) else { return dml::execute(s, stmt, params) };
    let def = {
        let planner = s.planner(params.clone());
        match dml::table_name_of(stmt).and_then(|n| planner.table_named(n)) {
            Ok(d) => d,
            // The writer reports it.
            Err(_) => return dml::execute(s, stmt, params),
        }
    };
    let rules: Vec<RuleDef> = s.engine.catalog.rules(&def.database, &def.name).into_iter().filter(|r| r.event == event).collect();
    if rules.is_empty() {
        return dml::execute(s, stmt, params);
    }
    let key = (def.database.clone(), def.name.clone());
    if s.rule_context.firing.contains(&key) {
        bail!(InvalidObjectDefinition, "infinite recursion detected in rules for relation \"{}\"", def.name);
    }
    let actions: Vec<(&RuleDef, Statement)> =
        rules.iter().flat_map(|r| r.actions.iter().map(move |a| parse_one(a).map(|st| (r, st)))).collect::<Result<_>>()?;
    if s.rule_context.in_with_query {
        with_query_check(&rules, &actions)?;
    }
    if s.rule_context.under_modifying_with
        && actions.iter().any(|(_, a)| matches!(a, Statement::Insert(i) if !matches!(i.source.as_deref().map(|q| q.body.as_ref()), Some(ast::SetExpr::Values(_)))))
    {
        bail!(FeatureNotSupported, "INSERT...SELECT rule actions are not supported for queries having data-modifying statements in WITH");
    }
    let saved = std::mem::take(&mut s.rule_context);
    s.rule_context.firing = saved.firing.clone();
    s.rule_context.firing.push(key);
    let r = apply(s, stmt, &def, event, &rules, &actions, params);
    s.rule_context = saved;
    r
}

/// PostgreSQL rewrites a data-modifying WITH query into one statement only.
fn with_query_check(rules: &[RuleDef], actions: &[(&RuleDef, Statement)]) -> Result<()> {
    let refuse = |what: &str| Err(err!(FeatureNotSupported, "{what} rules are not supported for data-modifying statements in WITH"));
    if rules.iter().any(|r| r.instead && r.condition.is_some()) {
        return refuse("conditional DO INSTEAD");
    }
    if rules.iter().any(|r| !r.instead) {
        return refuse("DO ALSO");
    }
    match actions {
        [] => refuse("DO INSTEAD NOTHING"),
        [(_, Statement::NOTIFY { .. })] => refuse("DO INSTEAD NOTIFY"),
        [_] => Ok(()),
        _ => refuse("multi-statement DO INSTEAD"),
    }
}

/// The statement's `new` / `old` relations, computed before anything runs.
type Pseudo = Vec<(String, Vec<PlanColumn>, Vec<RecordBatch>)>;

fn with_row_numbers(def: &TableDef, name: &str, batch: &RecordBatch) -> Result<(String, Vec<PlanColumn>, Vec<RecordBatch>)> {
    let mut cols: Vec<PlanColumn> =
        def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(name.to_string()), ty: c.ty }).collect();
    // Hidden from `new.*` (a system column's mark), reachable as `new."?rule row?"`.
    cols.push(PlanColumn { name: ROW.into(), qualifier: crate::planner::system_qualifier(Some(name)), ty: SqlType::Int8 });
    let n = batch.num_rows();
    let mut arrays: Vec<ArrayRef> = batch.columns().to_vec();
    arrays.push(Arc::new(Int64Array::from_iter_values(0..n as i64)));
    let schema = crate::exec::plan::arrow_schema(&cols);
    let b = RecordBatch::try_new_with_options(schema, arrays, &RecordBatchOptions::new().with_row_count(Some(n)))?;
    Ok((name.to_string(), cols, vec![b]))
}

/// The target's name in an UPDATE / DELETE (its alias, else its name).
fn target_qualifier(stmt: &Statement, def: &TableDef) -> String {
    dml::target_alias(stmt).map(|a| ident(&a.name)).unwrap_or_else(|| def.name.clone())
}

fn quoted(n: &str) -> String {
    format!("\"{}\"", n.replace('"', "\"\""))
}

/// `new` for an INSERT; `old` (and `new`) for an UPDATE / DELETE, from a
/// SELECT over the statement's FROM and WHERE.
fn pseudo_relations(s: &Session, stmt: &Statement, def: &TableDef, params: &Params) -> Result<Pseudo> {
    let planner = s.planner(params.clone());
    let (from, using, selection, sets): (String, Vec<String>, Option<&ast::Expr>, Vec<ast::Assignment>) = match stmt {
        Statement::Insert(ins) => {
            let batch = dml::insert_batch(&planner, def, ins, None)?;
            return Ok(vec![with_row_numbers(def, "new", &batch)?]);
        }
        Statement::Update(u) => {
            let extra = match &u.from {
                Some(ast::UpdateTableFromKind::BeforeSet(v) | ast::UpdateTableFromKind::AfterSet(v)) => {
                    v.iter().map(|t| t.to_string()).collect()
                }
                None => vec![],
            };
            (u.table.to_string(), extra, u.selection.as_ref(), dml::expand_tuple_assignments(&u.assignments)?)
        }
        Statement::Delete(d) => {
            let t = match &d.from {
                ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v.first(),
            };
            let Some(t) = t else { bail!(FeatureNotSupported, "DELETE needs one table") };
            let extra = d.using.iter().flatten().map(|t| t.to_string()).collect();
            (t.to_string(), extra, d.selection.as_ref(), vec![])
        }
        _ => bail!(Internal, "not DML"),
    };
    let q = target_qualifier(stmt, def);
    let mut items: Vec<String> = def.columns.iter().map(|c| format!("{}.{}", quoted(&q), quoted(&c.name))).collect();
    let width = items.len();
    if matches!(stmt, Statement::Update(_)) {
        for c in &def.columns {
            let set = sets.iter().find(|a| match &a.target {
                ast::AssignmentTarget::ColumnName(n) => n.0.last().and_then(|p| p.as_ident()).is_some_and(|i| ident(i) == c.name),
                _ => false,
            });
            items.push(match set {
                Some(a) => a.value.to_string(),
                None => format!("{}.{}", quoted(&q), quoted(&c.name)),
            });
        }
    }
    let mut sql = format!("SELECT {} FROM {}", items.join(", "), std::iter::once(from).chain(using).collect::<Vec<_>>().join(", "));
    if let Some(w) = selection {
        sql.push_str(&format!(" WHERE {w}"));
    }
    let plan = planner.plan(&parse_query(&sql)?)?;
    let pcols = plan.columns().to_vec();
    let batches = crate::exec::collect(&plan, &planner.ctx)?;
    let schema = crate::exec::plan::arrow_schema(&pcols);
    let all = if batches.is_empty() { RecordBatch::new_empty(schema) } else { arrow::compute::concat_batches(&schema, &batches)? };
    let part = |from: usize| -> Result<RecordBatch> {
        let mut arrays = Vec::with_capacity(width);
        for (k, c) in def.columns.iter().enumerate() {
            arrays.push(crate::exec::expr::cast_array(all.column(from + k), pcols[from + k].ty, c.ty)?);
        }
        let schema = crate::planner::region_descriptor(def).schema;
        Ok(RecordBatch::try_new_with_options(schema, arrays, &RecordBatchOptions::new().with_row_count(Some(all.num_rows())))?)
    };
    let mut out = vec![with_row_numbers(def, "old", &part(0)?)?];
    if matches!(stmt, Statement::Update(_)) {
        out.push(with_row_numbers(def, "new", &part(width)?)?);
    }
    Ok(out)
}

/// A rule action with the statement's rows joined in (`items`, may be empty)
/// and the rule's condition added to its WHERE.
fn bind_action(action: &Statement, items: &str, condition: Option<&ast::Expr>) -> Result<Statement> {
    let from = if items.is_empty() { vec![] } else { from_items(items)? };
    let mut a = action.clone();
    let add_to_select = |q: &mut ast::Query| -> Result<()> {
        match q.body.as_mut() {
            ast::SetExpr::Select(sel) => {
                sel.from.splice(0..0, from.iter().cloned());
                if let Some(c) = condition {
                    sel.selection = Some(and(sel.selection.take(), c.clone()));
                }
                Ok(())
            }
            ast::SetExpr::Values(v) => {
                // VALUES rows: one SELECT each, over the statement's rows.
                let tail = match (items.is_empty(), condition) {
                    (true, None) => String::new(),
                    (true, Some(c)) => format!(" WHERE {c}"),
                    (false, None) => format!(" FROM {items}"),
                    (false, Some(c)) => format!(" FROM {items} WHERE {c}"),
                };
                let selects: Vec<String> = v
                    .rows
                    .iter()
                    .map(|r| format!("SELECT {}{tail}", r.content.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ")))
                    .collect();
                let body = parse_query(&selects.join(" UNION ALL "))?.body;
                q.body = body;
                Ok(())
            }
            _ if from.is_empty() && condition.is_none() => Ok(()),
            _ => bail!(FeatureNotSupported, "a rule action that is a set operation is not supported"),
        }
    };
    match &mut a {
        Statement::Query(q) => add_to_select(q)?,
        Statement::Insert(ins) => match ins.source.as_mut() {
            Some(q) => add_to_select(q)?,
            None if from.is_empty() && condition.is_none() => {}
            None => bail!(FeatureNotSupported, "a DEFAULT VALUES rule action is not supported here"),
        },
        Statement::Update(u) => {
            if !from.is_empty() {
                match u.from.as_mut() {
                    Some(ast::UpdateTableFromKind::BeforeSet(v) | ast::UpdateTableFromKind::AfterSet(v)) => {
                        v.splice(0..0, from);
                    }
                    None => u.from = Some(ast::UpdateTableFromKind::AfterSet(from)),
                }
            }
            return finish_update(a, condition);
        }
        Statement::Delete(d) => {
            if !from.is_empty() {
                d.using.get_or_insert_with(Vec::new).splice(0..0, from);
            }
            if let Some(c) = condition {
                d.selection = Some(and(d.selection.take(), c.clone()));
            }
        }
        _ => {}
    }
    Ok(a)
}

fn finish_update(mut a: Statement, condition: Option<&ast::Expr>) -> Result<Statement> {
    if let (Statement::Update(u), Some(c)) = (&mut a, condition) {
        u.selection = Some(and(u.selection.take(), c.clone()));
    }
    Ok(a)
}

/// `old.x` → `t.x` (the target as the statement names it).
fn old_as_target(e: &ast::Expr, target: &str) -> Result<ast::Expr> {
    let mut e = e.clone();
    let mut uses_new = false;
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        if let ast::Expr::CompoundIdentifier(parts) = x {
            if let Some(first) = parts.first_mut().filter(|i| i.quote_style.is_none()) {
                match first.value.to_lowercase().as_str() {
                    "old" => *first = ast::Ident::with_quote('"', target),
                    "new" => uses_new = true,
                    _ => {}
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    if uses_new {
        bail!(FeatureNotSupported, "a conditional DO INSTEAD rule on UPDATE whose condition reads NEW is not supported");
    }
    Ok(e)
}

/// The statement itself, for the rows no conditional DO INSTEAD rule takes.
fn restricted_original(stmt: &Statement, def: &TableDef, conditions: &[ast::Expr]) -> Result<Statement> {
    if conditions.is_empty() {
        return Ok(stmt.clone());
    }
    let not_taken = |c: &ast::Expr| ast::Expr::IsNotTrue(Box::new(ast::Expr::Nested(Box::new(c.clone()))));
    let mut out = stmt.clone();
    match &mut out {
        Statement::Insert(ins) => {
            // The computed rows go in as they are (identity values included).
            let cols: Vec<String> = def.columns.iter().map(|c| quoted(&c.name)).collect();
            let mut sql = format!("SELECT {} FROM \"new\"", cols.join(", "));
            let mut w: Option<ast::Expr> = None;
            for c in conditions {
                w = Some(and(w, not_taken(c)));
            }
            if let Some(w) = w {
                sql.push_str(&format!(" WHERE {w}"));
            }
            ins.columns = def.columns.iter().map(|c| ast::ObjectName::from(vec![ast::Ident::with_quote('"', c.name.clone())])).collect();
            ins.source = Some(Box::new(parse_query(&sql)?));
            ins.overriding = Some(ast::InsertOverriding::System);
        }
        Statement::Update(u) => {
            let t = target_qualifier(stmt, def);
            for c in conditions {
                u.selection = Some(and(u.selection.take(), not_taken(&old_as_target(c, &t)?)));
            }
        }
        Statement::Delete(d) => {
            let t = target_qualifier(stmt, def);
            for c in conditions {
                d.selection = Some(and(d.selection.take(), not_taken(&old_as_target(c, &t)?)));
            }
        }
        _ => {}
    }
    Ok(out)
}

/// Run `f` with the statement's `new` / `old` relations in scope.
fn with_pseudo<T>(s: &mut Session, pseudo: &Pseudo, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
    let saved = s.with_scope.clone();
    let mut scope = saved.clone().unwrap_or_default();
    scope.materialized.extend(pseudo.iter().cloned());
    s.with_scope = Some(scope);
    let r = f(s);
    s.with_scope = saved;
    r
}

fn apply(
    s: &mut Session,
    stmt: &Statement,
    def: &TableDef,
    event: RuleEvent,
    rules: &[RuleDef],
    actions: &[(&RuleDef, Statement)],
    params: Params,
) -> Result<QueryResult> {
    let pseudo = pseudo_relations(s, stmt, def, &params)?;
    let instead = rules.iter().any(|r| r.instead && r.condition.is_none());
    let conditions: Vec<ast::Expr> =
        rules.iter().filter(|r| r.instead).filter_map(|r| r.condition.as_deref()).map(parse_condition).collect::<Result<_>>()?;
    let has_where = match stmt {
        Statement::Update(u) => u.selection.is_some() || u.from.is_some(),
        Statement::Delete(d) => d.selection.is_some() || d.using.is_some(),
        _ => true,
    };
    let items = match event {
        RuleEvent::Insert => "\"new\"".to_string(),
        RuleEvent::Delete => "\"old\"".to_string(),
        RuleEvent::Update => format!("\"old\" JOIN \"new\" ON \"old\".{r} = \"new\".{r}", r = quoted(ROW)),
    };
    let run_original = |s: &mut Session| -> Result<Option<QueryResult>> {
        if instead {
            return Ok(None);
        }
        let st = restricted_original(stmt, def, &conditions)?;
        with_pseudo(s, &pseudo, |s| dml::execute(s, &st, params.clone())).map(Some)
    };
    let mut original = None;
    if event == RuleEvent::Insert {
        original = run_original(s)?;
    }
    let mut instead_result: Option<QueryResult> = None;
    for (rule, action) in actions {
        let condition = rule.condition.as_deref().map(parse_condition).transpose()?;
        let join = event == RuleEvent::Insert || has_where || mentions_new_or_old(action) || mentions_new_or_old(&condition);
        let bound = if matches!(action, Statement::NOTIFY { .. }) {
            action.clone()
        } else {
            bind_action(action, if join { &items } else { "" }, condition.as_ref())?
        };
        let r = with_pseudo(s, &pseudo, |s| s.execute_statement(&WeirStatement::Sql(bound), Params::default()))?;
        if rule.instead && rule.condition.is_none() {
            instead_result = Some(r);
        }
    }
    if event != RuleEvent::Insert {
        original = run_original(s)?;
    }
    if let Some(r) = original {
        return Ok(r);
    }
    let tag = match event {
        RuleEvent::Insert => "INSERT 0",
        RuleEvent::Update => "UPDATE",
        RuleEvent::Delete => "DELETE",
    };
    let wants_rows = match stmt {
        Statement::Insert(i) => i.returning.is_some(),
        Statement::Update(u) => u.returning.is_some(),
        Statement::Delete(d) => d.returning.is_some(),
        _ => false,
    };
    match instead_result {
        Some(r @ (QueryResult::Returning { .. } | QueryResult::Rows { .. })) => Ok(r),
        _ if wants_rows => Err(err!(FeatureNotSupported, "cannot perform {} RETURNING on relation \"{}\"", event.keyword(), def.name)
            .with_hint(format!("You need an unconditional ON {} DO INSTEAD rule with a RETURNING clause.", event.keyword()))),
        Some(QueryResult::Command(t)) if t.starts_with(tag) => Ok(QueryResult::Command(t)),
        _ => Ok(QueryResult::Command(format!("{tag} 0"))),
    }
}
