//! PL/pgSQL bodies, parsed once into statements on sqlparser's tokens.
//! The block structure (DECLARE / BEGIN … END, IF, CASE, loops, RETURN,
//! RAISE, …) is read here; every expression and embedded SQL statement
//! is handed to sqlparser (as PostgreSQL hands them to its SQL parser).
//! Running them is `sql/plpgsql.rs`'s.

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use super::{nesting, new_parser, syntax_error, WeirDialect};
use crate::error::WeirError;
use crate::{bail, err};

/// The expression of a `BEGIN RETURN expr; END` body; None for any other
/// body (declarations, assignments, IF, loops, RAISE …).
pub fn return_expression(body: &str) -> Result<Option<ast::Expr>, WeirError> {
    let dialect = WeirDialect::default();
    let mut p = new_parser(&dialect, body)?;
    if !p.parse_keyword(Keyword::BEGIN) || !p.parse_keyword(Keyword::RETURN) {
        return Ok(None);
    }
    let Ok(e) = p.parse_expr() else { return Ok(None) };
    if !p.consume_token(&Token::SemiColon) || !p.parse_keyword(Keyword::END) {
        return Ok(None);
    }
    while p.consume_token(&Token::SemiColon) {}
    if p.peek_token_ref().token != Token::EOF {
        return Ok(None);
    }
    nesting::check(&e)?;
    Ok(Some(e))
}

/// A block: `[<<label>>] [DECLARE decls] BEGIN stmts [EXCEPTION …] END`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub label: Option<String>,
    pub decls: Vec<Decl>,
    pub body: Vec<Stmt>,
    /// `EXCEPTION WHEN cond [OR cond] THEN stmts …`: condition names
    /// (lowercase; `others` catches all) and handlers.
    pub handlers: Vec<(Vec<String>, Vec<Stmt>)>,
}

/// One declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    pub name: String,
    /// The declared type; `record` for a record variable.
    pub ty: ast::DataType,
    pub constant: bool,
    pub not_null: bool,
    pub default: Option<ast::Expr>,
    /// `name ALIAS FOR $n` / `ALIAS FOR other`.
    pub alias_for: Option<String>,
}

/// `RAISE`'s level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaiseLevel {
    Debug,
    Log,
    Info,
    Notice,
    Warning,
    Exception,
}

/// One statement of a body.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Block(Block),
    /// `target := expr` (`target` is `name` or `record.field`).
    Assign {
        target: Vec<String>,
        expr: ast::Expr,
    },
    If {
        branches: Vec<(ast::Expr, Vec<Stmt>)>,
        otherwise: Vec<Stmt>,
    },
    /// `CASE [subject] WHEN values THEN stmts … [ELSE stmts] END CASE`;
    /// `otherwise` None raises 20000 when no branch matches.
    Case {
        subject: Option<ast::Expr>,
        branches: Vec<(Vec<ast::Expr>, Vec<Stmt>)>,
        otherwise: Option<Vec<Stmt>>,
    },
    Loop {
        label: Option<String>,
        body: Vec<Stmt>,
    },
    While {
        label: Option<String>,
        cond: ast::Expr,
        body: Vec<Stmt>,
    },
    ForRange {
        label: Option<String>,
        var: String,
        reverse: bool,
        low: ast::Expr,
        high: ast::Expr,
        step: Option<ast::Expr>,
        body: Vec<Stmt>,
    },
    ForQuery {
        label: Option<String>,
        var: String,
        query: Box<ast::Query>,
        body: Vec<Stmt>,
    },
    Exit {
        label: Option<String>,
        when: Option<ast::Expr>,
    },
    Continue {
        label: Option<String>,
        when: Option<ast::Expr>,
    },
    Return(Option<ast::Expr>),
    ReturnNext(Option<ast::Expr>),
    ReturnQuery(Box<ast::Query>),
    /// `RAISE level 'format', args [USING option = expr, …]`; no format
    /// with a bare `RAISE` (re-raise) or `RAISE USING …`.
    Raise {
        level: RaiseLevel,
        format: Option<String>,
        args: Vec<ast::Expr>,
        options: Vec<(String, ast::Expr)>,
    },
    /// `PERFORM select-list …`, kept as the `SELECT` it means.
    Perform(Box<ast::Query>),
    /// An SQL statement, with the variables of its `INTO [STRICT]` clause.
    Sql {
        stmt: Box<ast::Statement>,
        into: Vec<Vec<String>>,
        strict: bool,
    },
    /// `GET DIAGNOSTICS var = ROW_COUNT`.
    GetRowCount(String),
    Null,
}

/// Parse a PL/pgSQL body (the function's source text).
pub fn parse(body: &str) -> Result<Block, WeirError> {
    let dialect = WeirDialect::default();
    let tokens = Tokenizer::new(&dialect, body)
        .tokenize_with_location()
        .map_err(|e| syntax_error(body, sqlparser::parser::ParserError::TokenizerError(e.to_string())))?;
    nesting::check_tokens(body, &tokens)?;
    let tokens: Vec<TokenWithSpan> = split_ranges(tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect());
    let mut r = Reader { toks: tokens, pos: 0, src: body };
    let label = r.label();
    let block = r.block(label)?;
    while r.eat_tok(&Token::SemiColon) {}
    if !r.at_end() {
        return Err(r.error("syntax error at end of function body"));
    }
    Ok(block)
}

/// `1..10` comes from the tokenizer as the numbers `1.` and `.10`: split
/// them into `1`, `.`, `.`, `10` so a FOR range's `..` is two periods.
fn split_ranges(toks: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(toks.len());
    for t in toks {
        let span = t.span;
        match &t.token {
            Token::Number(n, l)
                if n.len() > 1
                    && n.starts_with('.')
                    && matches!(out.last().map(|x| &x.token), Some(Token::Number(p, _)) if p.ends_with('.')) =>
            {
                if let Some(Token::Number(p, pl)) = out.last().map(|x| x.token.clone()) {
                    let k = out.len() - 1;
                    out[k].token = Token::Number(p.trim_end_matches('.').to_string(), pl);
                }
                out.push(TokenWithSpan::new(Token::Period, span));
                out.push(TokenWithSpan::new(Token::Period, span));
                out.push(TokenWithSpan::new(Token::Number(n[1..].to_string(), *l), span));
            }
            Token::Period if matches!(out.last().map(|x| &x.token), Some(Token::Number(p, _)) if p.ends_with('.') && p.len() > 1) => {
                if let Some(Token::Number(p, pl)) = out.last().map(|x| x.token.clone()) {
                    let k = out.len() - 1;
                    out[k].token = Token::Number(p.trim_end_matches('.').to_string(), pl);
                }
                out.push(TokenWithSpan::new(Token::Period, span));
                out.push(t);
            }
            _ => out.push(t),
        }
    }
    out
}

struct Reader<'a> {
    toks: Vec<TokenWithSpan>,
    pos: usize,
    src: &'a str,
}

fn upper(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

impl Reader<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.toks.len() || self.toks[self.pos].token == Token::EOF
    }

    fn peek(&self) -> &Token {
        self.toks.get(self.pos).map(|t| &t.token).unwrap_or(&Token::EOF)
    }

    fn peek_word(&self) -> Option<String> {
        upper(self.peek())
    }

    fn peek_word_at(&self, k: usize) -> Option<String> {
        self.toks.get(self.pos + k).and_then(|t| upper(&t.token))
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.peek_word().as_deref() == Some(word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_tok(&mut self, t: &Token) -> bool {
        if self.peek() == t {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn error(&self, fallback: &str) -> WeirError {
        match self.toks.get(self.pos) {
            Some(t) if t.token != Token::EOF => err!(Syntax, "syntax error at or near \"{}\"", t.token),
            _ => err!(Syntax, "{fallback}"),
        }
    }

    fn expect(&mut self, word: &str) -> Result<(), WeirError> {
        if self.eat(word) {
            Ok(())
        } else {
            Err(self.error(&format!("syntax error: {word} expected")))
        }
    }

    fn expect_tok(&mut self, t: &Token) -> Result<(), WeirError> {
        if self.eat_tok(t) {
            Ok(())
        } else {
            Err(self.error(&format!("syntax error: \"{t}\" expected")))
        }
    }

    fn ident(&mut self) -> Result<String, WeirError> {
        match self.peek().clone() {
            Token::Word(w) => {
                self.pos += 1;
                Ok(if w.quote_style.is_some() { w.value } else { w.value.to_lowercase() })
            }
            _ => Err(self.error("syntax error: a name expected")),
        }
    }

    /// `<<label>>`, if one comes next.
    fn label(&mut self) -> Option<String> {
        if self.peek() == &Token::ShiftLeft {
            if let (Some(Token::Word(w)), Some(Token::ShiftRight)) =
                (self.toks.get(self.pos + 1).map(|t| &t.token), self.toks.get(self.pos + 2).map(|t| &t.token))
            {
                let l = w.value.to_lowercase();
                self.pos += 3;
                return Some(l);
            }
        }
        None
    }

    /// Tokens up to (not including) the first of `stops` at depth 0
    /// (parentheses, brackets and CASE … END nest; `","` stops at a
    /// comma); `;` always stops.
    fn until(&mut self, stops: &[&str]) -> Vec<TokenWithSpan> {
        let start = self.pos;
        let mut depth = 0i32;
        while !self.at_end() {
            let t = self.peek();
            match t {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth -= 1,
                Token::SemiColon if depth <= 0 => break,
                Token::Comma if depth <= 0 && stops.contains(&",") => break,
                _ => {}
            }
            if let Some(w) = upper(t) {
                if depth <= 0 && stops.contains(&w.as_str()) {
                    break;
                }
                if w == "CASE" {
                    depth += 1;
                } else if w == "END" && depth > 0 {
                    depth -= 1;
                }
            }
            self.pos += 1;
        }
        self.toks[start..self.pos].to_vec()
    }

    fn sub<T>(
        &self,
        toks: Vec<TokenWithSpan>,
        f: impl FnOnce(&mut Parser) -> Result<T, sqlparser::parser::ParserError>,
    ) -> Result<T, WeirError> {
        if toks.is_empty() {
            return Err(self.error("syntax error: an expression expected"));
        }
        let dialect = WeirDialect::default();
        let mut toks = toks;
        toks.push(TokenWithSpan::wrap(Token::EOF));
        let mut p = Parser::new(&dialect).with_recursion_limit(super::RECURSION_LIMIT).with_tokens_with_locations(toks);
        let v = f(&mut p).map_err(|e| syntax_error(self.src, e))?;
        if p.peek_token_ref().token != Token::EOF {
            return Err(err!(Syntax, "syntax error at or near \"{}\"", p.peek_token_ref().token));
        }
        Ok(v)
    }

    fn expr_until(&mut self, stops: &[&str]) -> Result<ast::Expr, WeirError> {
        let toks = self.until(stops);
        let e = self.sub(toks, |p| p.parse_expr())?;
        nesting::check(&e)?;
        Ok(e)
    }

    fn query_until(&mut self, stops: &[&str]) -> Result<Box<ast::Query>, WeirError> {
        let toks = self.until(stops);
        self.sub(toks, |p| p.parse_query())
    }

    fn block(&mut self, label: Option<String>) -> Result<Block, WeirError> {
        let mut decls = Vec::new();
        while self.eat("DECLARE") {
            while !self.at_end() && self.peek_word().as_deref() != Some("BEGIN") && self.peek_word().as_deref() != Some("DECLARE") {
                decls.push(self.decl()?);
            }
        }
        self.expect("BEGIN")?;
        let body = self.stmts(&["END", "EXCEPTION"])?;
        let mut handlers = Vec::new();
        if self.eat("EXCEPTION") {
            while self.eat("WHEN") {
                let mut conds = vec![self.ident()?];
                while self.eat("OR") {
                    conds.push(self.ident()?);
                }
                self.expect("THEN")?;
                let stmts = self.stmts(&["END", "WHEN"])?;
                handlers.push((conds, stmts));
            }
        }
        self.expect("END")?;
        if let Some(Token::Word(_)) = Some(self.peek()) {
            if self.peek_word().as_deref() != Some("END") {
                self.ident()?;
            }
        }
        Ok(Block { label, decls, body, handlers })
    }

    fn decl(&mut self) -> Result<Decl, WeirError> {
        let name = self.ident()?;
        if self.eat("ALIAS") {
            self.expect("FOR")?;
            let of = match self.peek().clone() {
                Token::Placeholder(p) => {
                    self.pos += 1;
                    p
                }
                _ => self.ident()?,
            };
            self.expect_tok(&Token::SemiColon)?;
            return Ok(Decl { name, ty: ast::DataType::Unspecified, constant: false, not_null: false, default: None, alias_for: Some(of) });
        }
        let constant = self.eat("CONSTANT");
        let toks = self.until(&["NOT", "DEFAULT", "COLLATE"]);
        let toks: Vec<TokenWithSpan> = {
            // Stop before `:=` / `=` too.
            let k = toks.iter().position(|t| matches!(t.token, Token::Assignment | Token::Eq)).unwrap_or(toks.len());
            self.pos -= toks.len() - k;
            toks[..k].to_vec()
        };
        let ty = self.sub(toks, |p| p.parse_data_type())?;
        let mut not_null = false;
        if self.eat("COLLATE") {
            self.ident()?;
        }
        if self.eat("NOT") {
            self.expect("NULL")?;
            not_null = true;
        }
        let default = if self.eat("DEFAULT") || self.eat_tok(&Token::Assignment) || self.eat_tok(&Token::Eq) {
            Some(self.expr_until(&[])?)
        } else {
            None
        };
        self.expect_tok(&Token::SemiColon)?;
        Ok(Decl { name, ty, constant, not_null, default, alias_for: None })
    }

    /// Statements up to one of `ends` (not consumed).
    fn stmts(&mut self, ends: &[&str]) -> Result<Vec<Stmt>, WeirError> {
        let mut out = Vec::new();
        loop {
            if self.at_end() {
                return Err(err!(Syntax, "syntax error at end of input"));
            }
            if let Some(w) = self.peek_word() {
                if ends.contains(&w.as_str()) {
                    // `END IF` / `END LOOP` / `END CASE` end statements;
                    // a bare `END` ends the block.
                    return Ok(out);
                }
            }
            out.push(self.stmt()?);
        }
    }

    fn end_semicolon(&mut self) -> Result<(), WeirError> {
        self.expect_tok(&Token::SemiColon)
    }

    fn when_clause(&mut self) -> Result<Option<ast::Expr>, WeirError> {
        if self.eat("WHEN") {
            Ok(Some(self.expr_until(&[])?))
        } else {
            Ok(None)
        }
    }

    fn loop_body(&mut self, label: Option<String>) -> Result<Vec<Stmt>, WeirError> {
        self.expect("LOOP")?;
        let body = self.stmts(&["END"])?;
        self.expect("END")?;
        self.expect("LOOP")?;
        if let Some(l) = &label {
            if matches!(self.peek(), Token::Word(_)) {
                let got = self.ident()?;
                if &got != l {
                    bail!(Syntax, "end label \"{got}\" differs from block's label \"{l}\"");
                }
            }
        }
        self.end_semicolon()?;
        Ok(body)
    }

    fn stmt(&mut self) -> Result<Stmt, WeirError> {
        let label = self.label();
        let w = self.peek_word();
        match w.as_deref() {
            Some("DECLARE" | "BEGIN") => {
                let b = self.block(label)?;
                self.end_semicolon()?;
                Ok(Stmt::Block(b))
            }
            Some("LOOP") => Ok(Stmt::Loop { body: self.loop_body(label.clone())?, label }),
            Some("WHILE") => {
                self.pos += 1;
                let cond = self.expr_until(&["LOOP"])?;
                Ok(Stmt::While { body: self.loop_body(label.clone())?, label, cond })
            }
            Some("FOR") => {
                self.pos += 1;
                let var = self.ident()?;
                self.expect("IN")?;
                let is_query = matches!(self.peek_word().as_deref(), Some("SELECT" | "WITH" | "VALUES"))
                    || (self.peek() == &Token::LParen && matches!(self.peek_word_at(1).as_deref(), Some("SELECT" | "WITH" | "VALUES")));
                if is_query {
                    let query = self.query_until(&["LOOP"])?;
                    return Ok(Stmt::ForQuery { body: self.loop_body(label.clone())?, label, var, query });
                }
                let reverse = self.eat("REVERSE");
                let toks = self.until(&["LOOP", "BY"]);
                let k = toks
                    .windows(2)
                    .position(|p| p[0].token == Token::Period && p[1].token == Token::Period)
                    .ok_or_else(|| err!(Syntax, "syntax error: \"..\" expected in FOR loop"))?;
                let low = self.sub(toks[..k].to_vec(), |p| p.parse_expr())?;
                let high = self.sub(toks[k + 2..].to_vec(), |p| p.parse_expr())?;
                let step = if self.eat("BY") { Some(self.expr_until(&["LOOP"])?) } else { None };
                Ok(Stmt::ForRange { body: self.loop_body(label.clone())?, label, var, reverse, low, high, step })
            }
            Some("IF") => {
                self.pos += 1;
                let mut branches = Vec::new();
                let cond = self.expr_until(&["THEN"])?;
                self.expect("THEN")?;
                branches.push((cond, self.stmts(&["ELSIF", "ELSEIF", "ELSE", "END"])?));
                let mut otherwise = Vec::new();
                loop {
                    if self.eat("ELSIF") || self.eat("ELSEIF") {
                        let cond = self.expr_until(&["THEN"])?;
                        self.expect("THEN")?;
                        branches.push((cond, self.stmts(&["ELSIF", "ELSEIF", "ELSE", "END"])?));
                    } else if self.eat("ELSE") {
                        otherwise = self.stmts(&["END"])?;
                    } else {
                        break;
                    }
                }
                self.expect("END")?;
                self.expect("IF")?;
                self.end_semicolon()?;
                Ok(Stmt::If { branches, otherwise })
            }
            Some("CASE") => {
                self.pos += 1;
                let subject = if self.peek_word().as_deref() == Some("WHEN") { None } else { Some(self.expr_until(&["WHEN"])?) };
                let mut branches = Vec::new();
                while self.eat("WHEN") {
                    let toks = self.until(&["THEN"]);
                    let values = self.sub(toks, |p| p.parse_comma_separated(Parser::parse_expr))?;
                    self.expect("THEN")?;
                    branches.push((values, self.stmts(&["WHEN", "ELSE", "END"])?));
                }
                let otherwise = if self.eat("ELSE") { Some(self.stmts(&["END"])?) } else { None };
                self.expect("END")?;
                self.expect("CASE")?;
                self.end_semicolon()?;
                Ok(Stmt::Case { subject, branches, otherwise })
            }
            Some(w @ ("EXIT" | "CONTINUE")) => {
                let exit = w == "EXIT";
                self.pos += 1;
                let label = if matches!(self.peek(), Token::Word(_)) && self.peek_word().as_deref() != Some("WHEN") {
                    Some(self.ident()?)
                } else {
                    None
                };
                let when = self.when_clause()?;
                self.end_semicolon()?;
                Ok(if exit { Stmt::Exit { label, when } } else { Stmt::Continue { label, when } })
            }
            Some("RETURN") => {
                self.pos += 1;
                if self.eat("NEXT") {
                    let e = if self.peek() == &Token::SemiColon { None } else { Some(self.expr_until(&[])?) };
                    self.end_semicolon()?;
                    return Ok(Stmt::ReturnNext(e));
                }
                if self.eat("QUERY") {
                    let q = self.query_until(&[])?;
                    self.end_semicolon()?;
                    return Ok(Stmt::ReturnQuery(q));
                }
                let e = if self.peek() == &Token::SemiColon { None } else { Some(self.expr_until(&[])?) };
                self.end_semicolon()?;
                Ok(Stmt::Return(e))
            }
            Some("RAISE") => {
                self.pos += 1;
                let level = match self.peek_word().as_deref() {
                    Some("DEBUG") => Some(RaiseLevel::Debug),
                    Some("LOG") => Some(RaiseLevel::Log),
                    Some("INFO") => Some(RaiseLevel::Info),
                    Some("NOTICE") => Some(RaiseLevel::Notice),
                    Some("WARNING") => Some(RaiseLevel::Warning),
                    Some("EXCEPTION") => Some(RaiseLevel::Exception),
                    _ => None,
                };
                if level.is_some() {
                    self.pos += 1;
                }
                let level = level.unwrap_or(RaiseLevel::Exception);
                let format = match self.peek().clone() {
                    Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => {
                        self.pos += 1;
                        Some(s)
                    }
                    Token::Word(_) if self.peek_word().as_deref() != Some("USING") => {
                        // A condition name: RAISE division_by_zero.
                        let name = self.ident()?;
                        Some(name)
                    }
                    _ => None,
                };
                let mut args = Vec::new();
                while self.eat_tok(&Token::Comma) {
                    args.push(self.expr_until(&["USING", ","])?);
                }
                let mut options = Vec::new();
                if self.eat("USING") {
                    loop {
                        let name = self.ident()?;
                        if !self.eat_tok(&Token::Eq) {
                            self.expect_tok(&Token::Assignment)?;
                        }
                        let toks = self.until(&[]);
                        // Options are separated by commas at depth 0.
                        let mut depth = 0;
                        let k = toks
                            .iter()
                            .position(|t| {
                                match t.token {
                                    Token::LParen => depth += 1,
                                    Token::RParen => depth -= 1,
                                    _ => {}
                                }
                                depth == 0 && t.token == Token::Comma
                            })
                            .unwrap_or(toks.len());
                        self.pos -= toks.len() - k;
                        options.push((name, self.sub(toks[..k].to_vec(), |p| p.parse_expr())?));
                        if !self.eat_tok(&Token::Comma) {
                            break;
                        }
                    }
                }
                self.end_semicolon()?;
                Ok(Stmt::Raise { level, format, args, options })
            }
            Some("PERFORM") => {
                self.pos += 1;
                let mut toks = vec![TokenWithSpan::wrap(Token::make_keyword("SELECT"))];
                toks.extend(self.until(&[]));
                let q = self.sub(toks, |p| p.parse_query())?;
                self.end_semicolon()?;
                Ok(Stmt::Perform(q))
            }
            Some("NULL") if self.toks.get(self.pos + 1).map(|t| &t.token) == Some(&Token::SemiColon) => {
                self.pos += 2;
                Ok(Stmt::Null)
            }
            Some("GET") => {
                self.pos += 1;
                self.eat("CURRENT");
                self.expect("DIAGNOSTICS")?;
                let var = self.ident()?;
                if !self.eat_tok(&Token::Eq) {
                    self.expect_tok(&Token::Assignment)?;
                }
                self.expect("ROW_COUNT")?;
                self.end_semicolon()?;
                Ok(Stmt::GetRowCount(var))
            }
            Some("SELECT" | "INSERT" | "UPDATE" | "DELETE" | "WITH" | "VALUES" | "TRUNCATE" | "CREATE" | "DROP" | "ALTER") => self.sql(),
            _ if self.peek() == &Token::LParen => self.sql(),
            _ => {
                // An assignment: name [.field] := expr.
                let mut target = vec![self.ident()?];
                while self.eat_tok(&Token::Period) {
                    target.push(self.ident()?);
                }
                if !self.eat_tok(&Token::Assignment) && !self.eat_tok(&Token::Eq) {
                    return Err(self.error("syntax error"));
                }
                let expr = self.expr_until(&[])?;
                self.end_semicolon()?;
                Ok(Stmt::Assign { target, expr })
            }
        }
    }

    /// An SQL statement; `INTO [STRICT] targets` (after the select list,
    /// or after RETURNING) is taken out and kept.
    fn sql(&mut self) -> Result<Stmt, WeirError> {
        let toks = self.until(&[]);
        self.end_semicolon()?;
        let first = toks.first().and_then(|t| upper(&t.token));
        let mut keep = Vec::with_capacity(toks.len());
        let mut into = Vec::new();
        let mut strict = false;
        let mut depth = 0;
        let mut skipped_insert_into = first.as_deref() != Some("INSERT");
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            match t.token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            if depth == 0 && into.is_empty() && upper(&t.token).as_deref() == Some("INTO") {
                if !skipped_insert_into {
                    skipped_insert_into = true;
                    keep.push(t.clone());
                    i += 1;
                    continue;
                }
                i += 1;
                if toks.get(i).and_then(|t| upper(&t.token)).as_deref() == Some("STRICT") {
                    strict = true;
                    i += 1;
                }
                loop {
                    let mut name = Vec::new();
                    while let Some(Token::Word(w)) = toks.get(i).map(|t| &t.token) {
                        name.push(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() });
                        i += 1;
                        if toks.get(i).map(|t| &t.token) == Some(&Token::Period) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    if name.is_empty() {
                        bail!(Syntax, "syntax error at or near \"INTO\"");
                    }
                    into.push(name);
                    if toks.get(i).map(|t| &t.token) == Some(&Token::Comma)
                        && first.as_deref() == Some("SELECT")
                        && !self.from_follows(&toks, i + 1)
                    {
                        i += 1;
                        continue;
                    }
                    break;
                }
                continue;
            }
            keep.push(t.clone());
            i += 1;
        }
        let stmt = self.sub(keep, |p| p.parse_statement())?;
        Ok(Stmt::Sql { stmt: Box::new(stmt), into, strict })
    }

    /// Whether the INTO list goes on after a comma at `i` (a name follows
    /// that is not a keyword starting the rest of the query).
    fn from_follows(&self, toks: &[TokenWithSpan], i: usize) -> bool {
        matches!(toks.get(i).and_then(|t| upper(&t.token)).as_deref(), Some("FROM" | "WHERE" | "GROUP" | "ORDER" | "LIMIT" | "UNION"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_returned_expression_is_understood() {
        let e = return_expression("\n  BEGIN\n    RETURN a + 1;\n  END;\n").unwrap().unwrap();
        assert_eq!(e.to_string(), "a + 1");
        assert!(return_expression("begin return $1; end").unwrap().is_some());
        assert!(return_expression("begin raise notice 'x'; return 1; end").unwrap().is_none());
        assert!(return_expression("declare x int; begin return x; end").unwrap().is_none());
        assert!(return_expression("begin return 1; end; select 1").unwrap().is_none());
    }

    #[test]
    fn blocks_parse_into_statements() {
        let b = parse(
            "declare n int := 1; r record; begin
               NEW.b = NEW.b + 1;
               if n is null then return null; elsif n > 2 then n := 3; else null; end if;
               for i in 1..10 loop exit when i > 3; continue; end loop;
               for r in select * from t loop return next r; end loop;
               while n < 5 loop n := n + 1; end loop;
               raise notice 'x = %, y = %', n, (select 1);
               perform f(1);
               select a, b into n, m from t where c = n;
               insert into t values (n) returning a into n;
               return NEW;
             end",
        )
        .unwrap();
        assert_eq!(b.decls.len(), 2);
        assert_eq!(b.decls[0].default.as_ref().unwrap().to_string(), "1");
        assert_eq!(b.body.len(), 10);
        assert!(matches!(&b.body[0], Stmt::Assign { target, .. } if target == &["new", "b"]));
        assert!(matches!(&b.body[2], Stmt::ForRange { low, high, .. } if low.to_string() == "1" && high.to_string() == "10"));
        assert!(matches!(&b.body[3], Stmt::ForQuery { var, .. } if var == "r"));
        assert!(matches!(&b.body[5], Stmt::Raise { args, .. } if args.len() == 2));
        assert!(matches!(&b.body[7], Stmt::Sql { into, .. } if into.len() == 2));
        assert!(matches!(&b.body[8], Stmt::Sql { into, stmt, .. } if into.len() == 1 && stmt.to_string().starts_with("INSERT INTO t")));
        assert!(parse("begin if x then end").is_err());
        assert!(parse("begin return 1; end; garbage").is_err());
    }
}
