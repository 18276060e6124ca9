//! Running PL/pgSQL (`parser/plpgsql.rs` parses the body). As in
//! PostgreSQL, every expression is an SQL `SELECT` and every embedded
//! statement is SQL, planned and executed by the ordinary planner and
//! executor. Variables reach them through a one-row relation
//! (`Planner::materialized`, named `__plpgsql`) whose columns are the
//! variables' values: a reference `x` or `new.b` becomes the scalar
//! subquery `(SELECT "__v3" FROM "__plpgsql")`, so values keep their types
//! exactly (numerics, arrays) and may be used anywhere a subquery may.
//! Trigger functions see NEW, OLD, TG_* and the transition tables.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use sqlparser::ast;

use super::{Engine, Session};
use crate::catalog::function::FunctionDef;
use crate::error::{ErrorKind, Result, WeirError};
use crate::exec::expr::cast_array;
use crate::exec::plan::PlanColumn;
use crate::exec::{ExecCtx, RoutineAccess};
use crate::parser::plpgsql::{Block, Decl, RaiseLevel, Stmt};
use crate::planner::{Params, Planner};
use crate::types::SqlType;
use crate::{bail, err};

/// One field of a record (a row of NEW / OLD, or a query's row).
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: SqlType,
    /// One value.
    pub value: ArrayRef,
}

/// A row as fields, or NULL.
pub type Record = Option<Vec<Field>>;

/// What a trigger function is called with.
pub struct TriggerCall<'a> {
    pub name: &'a str,
    pub when: &'static str,
    pub level: &'static str,
    pub op: &'static str,
    pub table: &'a str,
    pub schema: &'a str,
    pub args: &'a [String],
    pub new: Record,
    pub old: Record,
    /// REFERENCING … TABLE AS name: (name, columns, rows).
    pub transition: Vec<(String, Vec<PlanColumn>, Vec<RecordBatch>)>,
}

/// Run a trigger function; its result row (None: NULL, skip the row).
pub fn run_trigger(s: &Session, f: &FunctionDef, call: TriggerCall) -> Result<Record> {
    let block = crate::parser::plpgsql::parse(&f.source).map_err(|e| context(e, f))?;
    let host = Host::of(s);
    let mut it = Interp::new(&host, call.transition);
    let text = |v: &str| scalar_text(Some(v));
    it.declare("new", Var::Record(call.new));
    it.declare("old", Var::Record(call.old));
    it.declare("tg_name", text(call.name));
    it.declare("tg_when", text(call.when));
    it.declare("tg_level", text(call.level));
    it.declare("tg_op", text(call.op));
    it.declare("tg_table_name", text(call.table));
    it.declare("tg_relname", text(call.table));
    it.declare("tg_table_schema", text(call.schema));
    it.declare(
        "tg_nargs",
        Var::Scalar { ty: SqlType::Int4, value: Arc::new(arrow::array::Int32Array::from(vec![call.args.len() as i32])) },
    );
    it.declare(
        "tg_argv",
        Var::Scalar {
            ty: SqlType::Text.array_of().unwrap_or(SqlType::Text),
            value: {
                let lit: Vec<String> = call.args.iter().map(|a| format!("\"{}\"", a.replace('\\', "\\\\").replace('"', "\\\""))).collect();
                let text_arr: ArrayRef = Arc::new(arrow::array::StringArray::from(vec![format!("{{{}}}", lit.join(","))]));
                cast_array(&text_arr, SqlType::Text, SqlType::Text.array_of().unwrap_or(SqlType::Text)).unwrap_or(text_arr)
            },
        },
    );
    match it.run(&block).map_err(|e| context(e, f))? {
        Some(Ret::Record(r)) => Ok(r),
        Some(Ret::Null) => Ok(None),
        Some(Ret::Scalar(a, _)) if a.is_null(0) => Ok(None),
        Some(Ret::Scalar(..)) => Err(err!(DatatypeMismatch, "returned row structure does not match the structure of the triggering table")),
        None => Err(err!(FunctionExecutedNoReturn, "control reached end of trigger procedure without RETURN")),
    }
}

/// What the interpreter runs in: the engine, the calling statement's
/// context (database, user, read view) and where notices go.
pub struct Host {
    engine: Arc<Engine>,
    ctx: ExecCtx,
    notices: Notices,
}

/// A session's queue of notices (severity, message).
pub type Notices = Arc<Mutex<Vec<(String, String)>>>;

impl Host {
    fn of(s: &Session) -> Host {
        Host { engine: s.engine.clone(), ctx: s.exec_ctx(), notices: s.notices.clone() }
    }

    /// A planner for one expression or statement, reading as the user.
    fn planner(&self) -> Planner<'_> {
        let p = Planner::new(&self.engine.catalog, &self.engine.storage, &self.ctx.database, self.ctx.clone(), Params::default());
        p.check_as.replace(Some(self.ctx.user.clone()));
        p
    }

    /// The fields of a composite type (or a table's row type) by name.
    fn composite(&self, name: &str) -> Option<Vec<(String, SqlType)>> {
        let cat = &self.engine.catalog;
        if let Some(t) = cat.user_type(&self.ctx.database, name) {
            if let crate::catalog::user_type::TypeKind::Composite(fields) = t.kind {
                return Some(fields);
            }
            return None;
        }
        cat.table(&self.ctx.database, name).map(|t| t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect())
    }

    fn notice(&self, severity: &str, message: &str) {
        if let Ok(mut n) = self.notices.lock() {
            n.push((severity.to_string(), message.to_string()));
        }
    }
}

/// The session's side of PL/pgSQL calls in queries (`RoutineAccess`).
pub struct Routines {
    engine: Arc<Engine>,
    notices: Notices,
}

impl Routines {
    pub fn new(engine: Arc<Engine>, notices: Notices) -> Self {
        Routines { engine, notices }
    }
}

impl std::fmt::Debug for Routines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Routines")
    }
}

thread_local! {
    /// PL/pgSQL calls running on this thread (a function calling another).
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Nested PL/pgSQL calls allowed: each nests a planner and an executor,
/// so a runaway recursion is stopped well before the stack is.
const DEPTH_MAX: u32 = 64;

impl RoutineAccess for Routines {
    fn call(&self, ctx: &ExecCtx, key: &str, args: Vec<(ArrayRef, SqlType)>, ret: SqlType) -> Result<ArrayRef> {
        let bad = || err!(Internal, "bad PL/pgSQL function key {key}");
        let (db, rest) = key.split_once('/').ok_or_else(bad)?;
        let (name, oid) = rest.rsplit_once('/').ok_or_else(bad)?;
        let oid: u32 = oid.parse().map_err(|_| bad())?;
        let def = self
            .engine
            .catalog
            .functions(db, name)
            .into_iter()
            .find(|f| f.id == oid)
            .ok_or_else(|| err!(UndefinedFunction, "function {name} does not exist"))?;
        if def.strict && args.iter().any(|(a, _)| a.is_null(0)) {
            return Ok(arrow::array::new_null_array(&ret.to_arrow(), 1));
        }
        let depth = DEPTH.with(|d| d.get());
        if depth >= DEPTH_MAX {
            return Err(crate::parser::nesting::too_deep());
        }
        DEPTH.with(|d| d.set(depth + 1));
        let host = Host { engine: self.engine.clone(), ctx: ctx.clone(), notices: self.notices.clone() };
        let r = run_function(&host, &def, args, ret);
        DEPTH.with(|d| d.set(depth));
        r
    }
}

/// Run a scalar PL/pgSQL function over one row of arguments.
fn run_function(host: &Host, def: &FunctionDef, args: Vec<(ArrayRef, SqlType)>, ret: SqlType) -> Result<ArrayRef> {
    let block = crate::parser::plpgsql::parse(&def.source)?;
    let mut it = Interp::new(host, Vec::new());
    for (k, (a, t)) in args.into_iter().enumerate() {
        if let Some(shape) = def.args.get(k).and_then(|x| x.type_name.as_deref()).and_then(|n| host.composite(n)) {
            // A composite argument (its text) as a record of its fields.
            let fields = fields_of_text(&shape, &cast_array(&a, t, SqlType::Text)?)?.unwrap_or_else(|| null_fields(&shape));
            if let Some(n) = def.args.get(k).and_then(|x| x.name.clone()) {
                it.declare(&n, Var::Record(Some(fields.clone())));
            }
            it.declare(&format!("${}", k + 1), Var::Record(Some(fields)));
            continue;
        }
        let declared = def.args.get(k).map(|x| x.ty).filter(|t| *t != SqlType::Unknown).unwrap_or(t);
        let value = cast_array(&a, t, declared)?;
        if let Some(n) = def.args.get(k).and_then(|x| x.name.clone()) {
            it.declare(&n, Var::Scalar { ty: declared, value: value.clone() });
        }
        it.declare(&format!("${}", k + 1), Var::Scalar { ty: declared, value });
    }
    match it.run(&block)? {
        Some(Ret::Scalar(a, t)) => cast_array(&a, t, ret),
        Some(Ret::Null) => Ok(arrow::array::new_null_array(&ret.to_arrow(), 1)),
        // A row returned as a composite value: its text.
        Some(Ret::Record(r)) => {
            let text = composite_text(&r)?;
            let a: ArrayRef = Arc::new(arrow::array::StringArray::from(vec![text]));
            cast_array(&a, SqlType::Text, ret)
        }
        None => bail!(FunctionExecutedNoReturn, "control reached end of function without RETURN"),
    }
}

/// A trigger's WHEN condition over NEW and OLD.
pub fn eval_when(s: &Session, when: &str, new: Record, old: Record) -> Result<bool> {
    let dialect = crate::parser::WeirDialect::default();
    let e = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(when)
        .and_then(|mut p| p.parse_expr())
        .map_err(|x| crate::parser::syntax_error(when, x))?;
    let host = Host::of(s);
    let mut it = Interp::new(&host, Vec::new());
    it.declare("new", Var::Record(new));
    it.declare("old", Var::Record(old));
    it.eval_bool(&e)
}

/// PostgreSQL names the function in an error's context; weir's errors
/// have no context field, so the message stays as it is.
fn context(e: WeirError, _f: &FunctionDef) -> WeirError {
    e
}

fn scalar_text(v: Option<&str>) -> Var {
    Var::Scalar { ty: SqlType::Text, value: Arc::new(arrow::array::StringArray::from(vec![v])) }
}

#[derive(Debug, Clone)]
enum Var {
    Scalar {
        ty: SqlType,
        value: ArrayRef,
    },
    /// A record; `shape` fixes its fields for a row-type variable.
    Record(Record),
}

/// What RETURN gave.
#[derive(Debug, Clone)]
enum Ret {
    Null,
    Scalar(ArrayRef, SqlType),
    Record(Record),
}

/// How a statement list ended.
enum Flow {
    Next,
    Exit(Option<String>),
    Continue(Option<String>),
    Return,
}

struct Interp<'h> {
    h: &'h Host,
    /// Visible variables, innermost last.
    vars: Vec<(String, Var)>,
    ret: Option<Ret>,
    transition: Vec<(String, Vec<PlanColumn>, Vec<RecordBatch>)>,
    /// Loop iterations left before giving up (a runaway loop is an error,
    /// not a hung session): 10 million, far above what a test needs.
    budget: u64,
}

const REL: &str = "__plpgsql";

impl<'h> Interp<'h> {
    fn new(h: &'h Host, transition: Vec<(String, Vec<PlanColumn>, Vec<RecordBatch>)>) -> Self {
        let mut it = Interp { h, vars: Vec::new(), ret: None, transition, budget: 10_000_000 };
        it.declare("found", Var::Scalar { ty: SqlType::Bool, value: Arc::new(arrow::array::BooleanArray::from(vec![false])) });
        it
    }

    fn declare(&mut self, name: &str, v: Var) {
        self.vars.push((name.to_string(), v));
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.vars.iter().rposition(|(n, _)| n == name)
    }

    fn run(&mut self, b: &Block) -> Result<Option<Ret>> {
        match self.block(b)? {
            Flow::Return => Ok(self.ret.take()),
            Flow::Exit(Some(l)) | Flow::Continue(Some(l)) => {
                bail!(Syntax, "there is no label \"{l}\" attached to any block or loop enclosing this statement")
            }
            _ => Ok(None),
        }
    }

    fn block(&mut self, b: &Block) -> Result<Flow> {
        let mark = self.vars.len();
        let r = self.declare_all(&b.decls).and_then(|_| self.stmts(&b.body));
        let r = match r {
            Err(e) if !b.handlers.is_empty() => {
                let handler = b.handlers.iter().find(|(conds, _)| conds.iter().any(|c| condition_matches(c, &e)));
                match handler {
                    Some((_, stmts)) => {
                        self.vars.truncate(mark);
                        self.declare("sqlstate", scalar_text(Some(e.sqlstate())));
                        self.declare("sqlerrm", scalar_text(Some(&e.message)));
                        self.stmts(stmts)
                    }
                    None => Err(e),
                }
            }
            r => r,
        };
        self.vars.truncate(mark);
        match r? {
            Flow::Exit(Some(l)) if b.label.as_deref() == Some(l.as_str()) => Ok(Flow::Next),
            f => Ok(f),
        }
    }

    fn declare_all(&mut self, decls: &[Decl]) -> Result<()> {
        for d in decls {
            if let Some(of) = &d.alias_for {
                let i = self
                    .find(of.trim_start_matches('$'))
                    .or_else(|| self.find(of))
                    .ok_or_else(|| err!(UndefinedObject, "variable \"{of}\" does not exist"))?;
                let v = self.vars[i].1.clone();
                self.declare(&d.name, v);
                continue;
            }
            let is_record = matches!(&d.ty, ast::DataType::Custom(n, _) if n.to_string().eq_ignore_ascii_case("record"));
            if is_record {
                self.declare(&d.name, Var::Record(None));
                continue;
            }
            // A composite type's variable is a row of NULL fields.
            if let ast::DataType::Custom(n, _) = &d.ty {
                let name = crate::planner::object_name(n)?.1;
                if let Some(shape) = self.h.composite(&name) {
                    let mut fields = null_fields(&shape);
                    if let Some(e) = &d.default {
                        let (a, t) = self.eval(e)?;
                        fields = fields_of_text(&shape, &cast_array(&a, t, SqlType::Text)?)?.unwrap_or(fields);
                    }
                    self.declare(&d.name, Var::Record(Some(fields)));
                    continue;
                }
            }
            let ty = self.type_of(&d.ty)?;
            let value = match &d.default {
                Some(e) => {
                    let (a, t) = self.eval(e)?;
                    cast_array(&a, t, ty)?
                }
                None => arrow::array::new_null_array(&ty.to_arrow(), 1),
            };
            if d.not_null && value.is_null(0) {
                bail!(NullValueNotAllowed, "variable \"{}\" must have a default value, since it's declared NOT NULL", d.name);
            }
            self.declare(&d.name, Var::Scalar { ty, value });
        }
        Ok(())
    }

    fn type_of(&self, dt: &ast::DataType) -> Result<SqlType> {
        crate::planner::resolve_type(&self.h.engine.catalog, &self.h.ctx.database, dt)
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<Flow> {
        for st in stmts {
            match self.stmt(st)? {
                Flow::Next => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Next)
    }

    fn set_found(&mut self, found: bool) {
        if let Some(i) = self.find("found") {
            self.vars[i].1 = Var::Scalar { ty: SqlType::Bool, value: Arc::new(arrow::array::BooleanArray::from(vec![found])) };
        }
    }

    fn tick(&mut self) -> Result<()> {
        self.h.ctx.check()?;
        if self.budget == 0 {
            bail!(ProgramLimitExceeded, "PL/pgSQL loop ran more than 10000000 times");
        }
        self.budget -= 1;
        Ok(())
    }

    /// A loop body's flow: Some(flow) leaves the loop with it.
    fn after_body(flow: Flow, label: &Option<String>) -> Option<Flow> {
        match flow {
            Flow::Next => None,
            Flow::Continue(None) => None,
            Flow::Continue(Some(l)) if label.as_deref() == Some(l.as_str()) => None,
            Flow::Exit(None) => Some(Flow::Next),
            Flow::Exit(Some(l)) if label.as_deref() == Some(l.as_str()) => Some(Flow::Next),
            f => Some(f),
        }
    }

    fn stmt(&mut self, st: &Stmt) -> Result<Flow> {
        match st {
            Stmt::Null => Ok(Flow::Next),
            Stmt::Block(b) => self.block(b),
            Stmt::Assign { target, expr } => {
                // A whole record: `r := new` / `new := row`.
                if target.len() == 1 {
                    if let Some(i) = self.find(&target[0]) {
                        if let Var::Record(cur) = &self.vars[i].1 {
                            let shape: Option<Vec<(String, SqlType)>> =
                                cur.as_ref().map(|f| f.iter().map(|x| (x.name.clone(), x.ty)).collect());
                            let rec = match shape {
                                // A composite variable takes a composite value's text.
                                Some(shape) if self.record_var(expr).is_none() => {
                                    let (a, t) = self.eval(expr)?;
                                    Some(fields_of_text(&shape, &cast_array(&a, t, SqlType::Text)?)?.unwrap_or_else(|| null_fields(&shape)))
                                }
                                _ => self.record_of(expr)?,
                            };
                            self.vars[i].1 = Var::Record(rec);
                            return Ok(Flow::Next);
                        }
                    }
                }
                let (a, t) = self.eval(expr)?;
                self.assign(target, a, t)?;
                Ok(Flow::Next)
            }
            Stmt::If { branches, otherwise } => {
                for (cond, body) in branches {
                    if self.eval_bool(cond)? {
                        return self.stmts(body);
                    }
                }
                self.stmts(otherwise)
            }
            Stmt::Case { subject, branches, otherwise } => {
                for (values, body) in branches {
                    for v in values {
                        let hit = match subject {
                            Some(subj) => self.eval_bool(&ast::Expr::BinaryOp {
                                left: Box::new(ast::Expr::Nested(Box::new(subj.clone()))),
                                op: ast::BinaryOperator::Eq,
                                right: Box::new(ast::Expr::Nested(Box::new(v.clone()))),
                            })?,
                            None => self.eval_bool(v)?,
                        };
                        if hit {
                            return self.stmts(body);
                        }
                    }
                }
                match otherwise {
                    Some(body) => self.stmts(body),
                    None => bail!(CaseNotFound, "case not found"),
                }
            }
            Stmt::Loop { label, body } => loop {
                self.tick()?;
                let f = self.stmts(body)?;
                if let Some(f) = Self::after_body(f, label) {
                    return Ok(f);
                }
            },
            Stmt::While { label, cond, body } => {
                while self.eval_bool(cond)? {
                    self.tick()?;
                    let f = self.stmts(body)?;
                    if let Some(f) = Self::after_body(f, label) {
                        return Ok(f);
                    }
                }
                Ok(Flow::Next)
            }
            Stmt::ForRange { label, var, reverse, low, high, step, body } => {
                let int = |it: &mut Self, e: &ast::Expr| -> Result<i64> {
                    let (a, t) = it.eval(e)?;
                    let a = cast_array(&a, t, SqlType::Int8)?;
                    if a.is_null(0) {
                        bail!(NullValueNotAllowed, "lower bound of FOR loop cannot be null");
                    }
                    match crate::types::value_at(a.as_ref(), 0) {
                        crate::types::Value::Int(i) => Ok(i),
                        _ => bail!(DatatypeMismatch, "FOR loop bounds must be integers"),
                    }
                };
                let lo = int(self, low)?;
                let hi = int(self, high)?;
                let by = match step {
                    Some(e) => int(self, e)?,
                    None => 1,
                };
                if by <= 0 {
                    bail!(InvalidParameterValue, "BY value of FOR loop must be greater than zero");
                }
                let mark = self.vars.len();
                let mut i = lo;
                let mut found = false;
                let r = loop {
                    if (!reverse && i > hi) || (*reverse && i < hi) {
                        break Ok(Flow::Next);
                    }
                    found = true;
                    self.tick()?;
                    self.vars.truncate(mark);
                    self.declare(var, Var::Scalar { ty: SqlType::Int4, value: Arc::new(arrow::array::Int32Array::from(vec![i as i32])) });
                    let f = self.stmts(body)?;
                    if let Some(f) = Self::after_body(f, label) {
                        break Ok(f);
                    }
                    i = if *reverse { i - by } else { i + by };
                };
                self.vars.truncate(mark);
                self.set_found(found);
                r
            }
            Stmt::ForQuery { label, var, query, body } => {
                let (cols, batches) = self.query(&ast::Statement::Query(query.clone()))?;
                let slot = self
                    .find(var)
                    .ok_or_else(|| err!(Syntax, "loop variable of loop over rows must be a record variable or list of scalar variables"))?;
                let mut found = false;
                for b in &batches {
                    for r in 0..b.num_rows() {
                        found = true;
                        self.tick()?;
                        let rec = row_record(&cols, b, r);
                        self.put_row(slot, rec)?;
                        let f = self.stmts(body)?;
                        if let Some(f) = Self::after_body(f, label) {
                            self.set_found(true);
                            return Ok(f);
                        }
                    }
                }
                self.set_found(found);
                Ok(Flow::Next)
            }
            Stmt::Exit { label, when } | Stmt::Continue { label, when } => {
                if let Some(w) = when {
                    if !self.eval_bool(w)? {
                        return Ok(Flow::Next);
                    }
                }
                Ok(if matches!(st, Stmt::Exit { .. }) { Flow::Exit(label.clone()) } else { Flow::Continue(label.clone()) })
            }
            Stmt::Return(e) => {
                self.ret = Some(match e {
                    None => Ret::Null,
                    Some(e) if self.record_var(e).is_some() => Ret::Record(self.record_of(e)?),
                    Some(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Null) => Ret::Null,
                    Some(e) => {
                        let (a, t) = self.eval(e)?;
                        Ret::Scalar(a, t)
                    }
                });
                Ok(Flow::Return)
            }
            Stmt::ReturnNext(_) | Stmt::ReturnQuery(_) => {
                bail!(FeatureNotSupported, "RETURN NEXT and RETURN QUERY are not supported in weir's PL/pgSQL yet")
            }
            Stmt::Raise { level, format, args, options } => self.raise(*level, format.as_deref(), args, options).map(|_| Flow::Next),
            Stmt::Perform(q) => {
                let (_, batches) = self.query(&ast::Statement::Query(q.clone()))?;
                let n: usize = batches.iter().map(|b| b.num_rows()).sum();
                self.set_found(n > 0);
                Ok(Flow::Next)
            }
            Stmt::Sql { stmt, into, strict } => {
                if !matches!(**stmt, ast::Statement::Query(_)) {
                    bail!(FeatureNotSupported, "{} statements in PL/pgSQL functions are not supported yet", first_word(stmt));
                }
                let (cols, batches) = self.query(stmt)?;
                let n: usize = batches.iter().map(|b| b.num_rows()).sum();
                if *strict && n == 0 {
                    bail!(NoDataFound, "query returned no rows");
                }
                if *strict && n > 1 {
                    bail!(TooManyRows, "query returned more than one row");
                }
                if !into.is_empty() {
                    let first = batches.iter().find(|b| b.num_rows() > 0);
                    let rec: Vec<Field> = match first {
                        Some(b) => row_record(&cols, b, 0),
                        None => cols
                            .iter()
                            .map(|c| Field { name: c.name.clone(), ty: c.ty, value: arrow::array::new_null_array(&c.ty.to_arrow(), 1) })
                            .collect(),
                    };
                    if into.len() == 1 && into[0].len() == 1 {
                        if let Some(i) = self.find(&into[0][0]) {
                            if matches!(self.vars[i].1, Var::Record(_)) {
                                self.put_row(i, rec)?;
                                self.set_found(n > 0);
                                return Ok(Flow::Next);
                            }
                        }
                    }
                    for (k, target) in into.iter().enumerate() {
                        match rec.get(k) {
                            Some(f) => self.assign(target, f.value.clone(), f.ty)?,
                            None => {
                                self.assign(target, arrow::array::new_null_array(&arrow::datatypes::DataType::Null, 1), SqlType::Unknown)?
                            }
                        }
                    }
                }
                self.set_found(n > 0);
                Ok(Flow::Next)
            }
            Stmt::GetRowCount(_) => bail!(FeatureNotSupported, "GET DIAGNOSTICS is not supported in weir's PL/pgSQL yet"),
        }
    }

    /// A row into variable `slot`: a record takes it whole, a scalar its
    /// first column.
    fn put_row(&mut self, slot: usize, rec: Vec<Field>) -> Result<()> {
        match &self.vars[slot].1 {
            Var::Record(_) => self.vars[slot].1 = Var::Record(Some(rec)),
            Var::Scalar { ty, .. } => {
                let ty = *ty;
                let f = rec.into_iter().next().ok_or_else(|| err!(Syntax, "query returned no columns"))?;
                self.vars[slot].1 = Var::Scalar { ty, value: cast_array(&f.value, f.ty, ty)? };
            }
        }
        Ok(())
    }

    /// `name` or `record.field` := value (cast to the target's type).
    fn assign(&mut self, target: &[String], a: ArrayRef, t: SqlType) -> Result<()> {
        let i = self.find(&target[0]).ok_or_else(|| err!(Syntax, "\"{}\" is not a known variable", target[0]))?;
        match (&mut self.vars[i].1, target.len()) {
            (Var::Scalar { ty, value }, 1) => {
                *value = cast_array(&a, t, *ty)?;
                Ok(())
            }
            (Var::Record(Some(fields)), 2) => {
                let f = fields
                    .iter_mut()
                    .find(|f| f.name == target[1])
                    .ok_or_else(|| err!(UndefinedColumn, "record \"{}\" has no field \"{}\"", target[0], target[1]))?;
                f.value = cast_array(&a, t, f.ty)?;
                Ok(())
            }
            (Var::Record(None), 2) => Err(err!(ObjectNotInPrerequisiteState, "record \"{}\" is not assigned yet", target[0])
                .with_detail("The tuple structure of a not-yet-assigned record is indeterminate.")),
            _ => bail!(Syntax, "\"{}\" is not a known variable", target.join(".")),
        }
    }

    /// The record variable an expression names, if it is just one.
    fn record_var(&self, e: &ast::Expr) -> Option<usize> {
        match e {
            ast::Expr::Identifier(i) => self.find(&crate::planner::ident(i)).filter(|&k| matches!(self.vars[k].1, Var::Record(_))),
            ast::Expr::Nested(e) => self.record_var(e),
            _ => None,
        }
    }

    /// A record-valued expression: a record variable or NULL.
    fn record_of(&mut self, e: &ast::Expr) -> Result<Record> {
        match self.record_var(e) {
            Some(k) => match &self.vars[k].1 {
                Var::Record(r) => Ok(r.clone()),
                Var::Scalar { .. } => unreachable!("record_var finds records"),
            },
            None => {
                let (a, _) = self.eval(e)?;
                if a.is_null(0) {
                    Ok(None)
                } else {
                    bail!(FeatureNotSupported, "assigning {e} to a record is not supported")
                }
            }
        }
    }

    fn eval_bool(&mut self, e: &ast::Expr) -> Result<bool> {
        let (a, t) = self.eval(e)?;
        let a = cast_array(&a, t, SqlType::Bool)?;
        Ok(!a.is_null(0) && matches!(crate::types::value_at(a.as_ref(), 0), crate::types::Value::Bool(true)))
    }

    /// An expression's value: `SELECT expr`, one row.
    fn eval(&mut self, e: &ast::Expr) -> Result<(ArrayRef, SqlType)> {
        let mut q = select_one()?;
        if let ast::SetExpr::Select(sel) = q.body.as_mut() {
            sel.projection = vec![ast::SelectItem::UnnamedExpr(e.clone())];
        }
        let (cols, batches) = self.query(&ast::Statement::Query(q))?;
        let c = cols.first().ok_or_else(|| err!(Internal, "an expression gave no column"))?;
        let b = batches.iter().find(|b| b.num_rows() > 0);
        match b {
            Some(b) if cols.len() == 1 => Ok((b.column(0).slice(0, 1), c.ty)),
            Some(_) => bail!(Syntax, "query \"SELECT {e}\" returned {} columns", cols.len()),
            None => Ok((arrow::array::new_null_array(&c.ty.to_arrow(), 1), c.ty)),
        }
    }

    /// Run a query with the variables bound; its columns and rows.
    fn query(&mut self, stmt: &ast::Statement) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
        let mut stmt = stmt.clone();
        let mut cols: Vec<(PlanColumn, ArrayRef)> = Vec::new();
        let mut failure: Option<WeirError> = None;
        let _ = ast::visit_expressions_mut(&mut stmt, |e| {
            match self.reference(e, &mut cols) {
                Ok(Some(r)) => *e = r,
                Ok(None) => {}
                Err(x) => {
                    failure = Some(x);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        if let Some(e) = failure {
            return Err(e);
        }
        let ast::Statement::Query(q) = &stmt else {
            bail!(FeatureNotSupported, "{} statements in PL/pgSQL functions are not supported yet", first_word(&stmt));
        };
        let mut planner = self.h.planner();
        if !cols.is_empty() {
            let (pc, arrays): (Vec<PlanColumn>, Vec<ArrayRef>) = cols.into_iter().unzip();
            let schema = crate::exec::plan::arrow_schema(&pc);
            let batch = RecordBatch::try_new_with_options(schema, arrays, &RecordBatchOptions::new().with_row_count(Some(1)))?;
            planner.materialized.push((REL.to_string(), pc, vec![batch]));
        }
        for t in &self.transition {
            planner.materialized.push(t.clone());
        }
        let plan = planner.plan(q)?;
        let columns = plan.columns().to_vec();
        let batches = crate::exec::collect(&plan, &planner.ctx)?;
        Ok((columns, batches))
    }

    /// The replacement of a variable reference: a scalar subquery of the
    /// variables' relation (its value added to `cols`).
    fn reference(&self, e: &ast::Expr, cols: &mut Vec<(PlanColumn, ArrayRef)>) -> Result<Option<ast::Expr>> {
        let (slot, field) = match e {
            ast::Expr::Identifier(i) if i.quote_style.is_none() || !i.value.starts_with("__v") => {
                let name = crate::planner::ident(i);
                match self.find(&name) {
                    Some(k) => (k, None),
                    None => return Ok(None),
                }
            }
            ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let name = crate::planner::ident(&parts[0]);
                match self.find(&name) {
                    Some(k) if matches!(self.vars[k].1, Var::Record(_)) => (k, Some(crate::planner::ident(&parts[1]))),
                    _ => return Ok(None),
                }
            }
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Placeholder(p) if p.starts_with('$') => match self.find(p) {
                    Some(k) => (k, None),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let (name, ty, value) = match (&self.vars[slot].1, &field) {
            (Var::Scalar { ty, value }, None) => (format!("__v{slot}"), *ty, value.clone()),
            (Var::Record(Some(fields)), Some(f)) => {
                let k = fields
                    .iter()
                    .position(|x| &x.name == f)
                    .ok_or_else(|| err!(UndefinedColumn, "record \"{}\" has no field \"{f}\"", self.vars[slot].0))?;
                (format!("__v{slot}_{k}"), fields[k].ty, fields[k].value.clone())
            }
            (Var::Record(None), Some(_)) => {
                return Err(err!(ObjectNotInPrerequisiteState, "record \"{}\" is not assigned yet", self.vars[slot].0)
                    .with_detail("The tuple structure of a not-yet-assigned record is indeterminate."))
            }
            // A whole row: its text (NULL when it has no non-NULL field),
            // as a composite value is.
            (Var::Record(r), None) => {
                let text = composite_text(r)?;
                (format!("__v{slot}"), SqlType::Text, Arc::new(arrow::array::StringArray::from(vec![text])) as ArrayRef)
            }
            (Var::Scalar { .. }, Some(_)) => return Ok(None),
        };
        if !cols.iter().any(|(c, _)| c.name == name) {
            cols.push((PlanColumn::new(name.clone(), ty), value));
        }
        let sql = format!("(SELECT \"{name}\" FROM \"{REL}\")");
        let dialect = crate::parser::WeirDialect::default();
        let mut p = sqlparser::parser::Parser::new(&dialect).try_with_sql(&sql).map_err(|x| err!(Internal, "{x}"))?;
        Ok(Some(p.parse_expr().map_err(|x| err!(Internal, "{x}"))?))
    }

    /// A value as PostgreSQL's text output (RAISE's `%`).
    fn text_of(&mut self, e: &ast::Expr) -> Result<Option<String>> {
        if let Some(k) = self.record_var(e) {
            let Var::Record(r) = &self.vars[k].1 else { unreachable!("record_var finds records") };
            return match r {
                None => Ok(None),
                Some(fields) => Ok(Some(row_text(fields)?)),
            };
        }
        let (a, t) = self.eval(e)?;
        let a = cast_array(&a, t, SqlType::Text)?;
        Ok(match crate::types::value_at(a.as_ref(), 0) {
            crate::types::Value::Text(s) => Some(s),
            _ => None,
        })
    }

    fn raise(&mut self, level: RaiseLevel, format: Option<&str>, args: &[ast::Expr], options: &[(String, ast::Expr)]) -> Result<()> {
        let mut message = String::new();
        if let Some(f) = format {
            let placeholders = f.matches('%').count() - 2 * f.matches("%%").count();
            if placeholders < args.len() {
                bail!(Syntax, "too many parameters specified for RAISE");
            }
            if placeholders > args.len() {
                bail!(Syntax, "too few parameters specified for RAISE");
            }
            let mut chars = f.chars().peekable();
            let mut k = 0;
            while let Some(c) = chars.next() {
                if c == '%' {
                    if chars.peek() == Some(&'%') {
                        chars.next();
                        message.push('%');
                    } else {
                        let v = self.text_of(&args[k])?;
                        k += 1;
                        message.push_str(v.as_deref().unwrap_or("<NULL>"));
                    }
                } else {
                    message.push(c);
                }
            }
        }
        let mut kind = ErrorKind::RaiseException;
        let mut detail = None;
        let mut hint = None;
        for (name, e) in options {
            let v = self.text_of(e)?.unwrap_or_default();
            match name.as_str() {
                "message" => message = v,
                "detail" => detail = Some(v),
                "hint" => hint = Some(v),
                "errcode" => kind = errcode_kind(&v),
                _ => {}
            }
        }
        if format.is_none() && options.is_empty() {
            bail!(RaiseException, "RAISE without parameters cannot be used outside an exception handler");
        }
        if level == RaiseLevel::Exception {
            let mut e = WeirError::new(kind, message);
            e.detail = detail;
            e.hint = hint;
            return Err(e);
        }
        let severity = match level {
            RaiseLevel::Debug => "DEBUG",
            RaiseLevel::Log => "LOG",
            RaiseLevel::Info => "INFO",
            RaiseLevel::Notice => "NOTICE",
            RaiseLevel::Warning => "WARNING",
            RaiseLevel::Exception => "EXCEPTION",
        };
        self.h.notice(severity, &message);
        Ok(())
    }
}

/// `SELECT 1`, whose select list `eval` replaces.
fn select_one() -> Result<Box<ast::Query>> {
    let dialect = crate::parser::WeirDialect::default();
    let mut p = sqlparser::parser::Parser::new(&dialect).try_with_sql("SELECT 1").map_err(|x| err!(Internal, "{x}"))?;
    p.parse_query().map_err(|x| err!(Internal, "{x}"))
}

/// A row of a batch as fields.
fn row_record(cols: &[PlanColumn], b: &RecordBatch, r: usize) -> Vec<Field> {
    cols.iter().enumerate().map(|(i, c)| Field { name: c.name.clone(), ty: c.ty, value: b.column(i).slice(r, 1) }).collect()
}

/// Fields of the given shape, all NULL.
fn null_fields(shape: &[(String, SqlType)]) -> Vec<Field> {
    shape.iter().map(|(n, t)| Field { name: n.clone(), ty: *t, value: arrow::array::new_null_array(&t.to_arrow(), 1) }).collect()
}

/// A composite value's text `(1,,"a b")` (one value of a text array) as
/// fields of `shape`; None for NULL.
fn fields_of_text(shape: &[(String, SqlType)], text: &ArrayRef) -> Result<Option<Vec<Field>>> {
    let s = match crate::types::value_at(text.as_ref(), 0) {
        crate::types::Value::Text(s) => s,
        _ => return Ok(None),
    };
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .ok_or_else(|| err!(InvalidText, "malformed record literal: \"{s}\"").with_detail("Missing left parenthesis."))?;
    // Fields split at commas outside double quotes; "" is a quote inside
    // quotes, a backslash escapes; an empty unquoted field is NULL.
    let mut items: Vec<Option<String>> = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any_quote = false;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => {
                quoted = !quoted;
                any_quote = true;
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ',' if !quoted => {
                items.push(if cur.is_empty() && !any_quote { None } else { Some(std::mem::take(&mut cur)) });
                any_quote = false;
            }
            c => cur.push(c),
        }
    }
    items.push(if cur.is_empty() && !any_quote { None } else { Some(cur) });
    if items.len() != shape.len() {
        return Err(err!(InvalidText, "malformed record literal: \"{s}\"").with_detail(if items.len() > shape.len() {
            "Too many columns."
        } else {
            "Too few columns."
        }));
    }
    let mut out = Vec::with_capacity(shape.len());
    for ((n, t), v) in shape.iter().zip(items) {
        let a: ArrayRef = Arc::new(arrow::array::StringArray::from(vec![v]));
        out.push(Field { name: n.clone(), ty: *t, value: cast_array(&a, SqlType::Text, *t)? });
    }
    Ok(Some(out))
}

/// A row as a composite value's text; None for a NULL row (or one whose
/// fields are all NULL, which `IS NULL` calls NULL too).
fn composite_text(r: &Record) -> Result<Option<String>> {
    match r {
        Some(fields) if fields.iter().any(|f| !f.value.is_null(0)) => Ok(Some(row_text(fields)?)),
        _ => Ok(None),
    }
}

/// A row's text as PostgreSQL's record output writes it: `(1,,"a b")`.
pub fn row_text(fields: &[Field]) -> Result<String> {
    let mut parts = Vec::with_capacity(fields.len());
    for f in fields {
        let a = cast_array(&f.value, f.ty, SqlType::Text)?;
        parts.push(match crate::types::value_at(a.as_ref(), 0) {
            crate::types::Value::Text(s) => {
                if s.is_empty() || s.chars().any(|c| matches!(c, ',' | '(' | ')' | '"' | '\\' | ' ')) {
                    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\"\""))
                } else {
                    s
                }
            }
            _ => String::new(),
        });
    }
    Ok(format!("({})", parts.join(",")))
}

fn first_word(stmt: &ast::Statement) -> String {
    stmt.to_string().split_whitespace().next().unwrap_or("").to_ascii_uppercase()
}

/// An exception handler's condition against an error: `others`, a
/// condition name, or `SQLSTATE 'xxxxx'` kept as its code.
fn condition_matches(cond: &str, e: &WeirError) -> bool {
    let state = e.sqlstate();
    match cond {
        "others" => true,
        _ => condition_state(cond).is_some_and(|s| s == state),
    }
}

fn condition_state(name: &str) -> Option<&'static str> {
    Some(match name {
        "raise_exception" => "P0001",
        "no_data_found" => "P0002",
        "too_many_rows" => "P0003",
        "division_by_zero" => "22012",
        "numeric_value_out_of_range" => "22003",
        "unique_violation" => "23505",
        "not_null_violation" => "23502",
        "check_violation" => "23514",
        "foreign_key_violation" => "23503",
        "invalid_text_representation" => "22P02",
        "undefined_table" => "42P01",
        "undefined_column" => "42703",
        "undefined_function" => "42883",
        "syntax_error" => "42601",
        "case_not_found" => "20000",
        "feature_not_supported" => "0A000",
        _ => return None,
    })
}

/// RAISE … USING ERRCODE: a condition name or a five-character code, as
/// one of weir's error kinds where it has one (else raise_exception).
fn errcode_kind(v: &str) -> ErrorKind {
    let state = condition_state(v).unwrap_or(v);
    match state {
        "22012" => ErrorKind::DivisionByZero,
        "22003" => ErrorKind::NumericOutOfRange,
        "23505" => ErrorKind::UniqueViolation,
        "23502" => ErrorKind::NotNullViolation,
        "22P02" => ErrorKind::InvalidText,
        "P0002" => ErrorKind::NoDataFound,
        "P0003" => ErrorKind::TooManyRows,
        "20000" => ErrorKind::CaseNotFound,
        "0A000" => ErrorKind::FeatureNotSupported,
        _ => ErrorKind::RaiseException,
    }
}
