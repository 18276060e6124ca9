//! Operators, operator classes and casts as the catalog records them
//! (`CREATE OPERATOR`, `CREATE OPERATOR CLASS`, `CREATE CAST`): what each
//! names, by type and function name, found again when used. The statements
//! are `sql/operator.rs`; hash partitioning reads operator classes
//! (`planner/partition.rs`), the binder operators and casts.
//!
//! Imports `types` and `error` only.

use serde::{Deserialize, Serialize};

use super::Catalog;
use crate::error::Result;
use crate::types::SqlType;

pub(super) const OPERATOR_PREFIX: &str = "opr/";

/// A type an operator, operator class or cast names: a built-in type, or a
/// user-defined one (a domain, a base type) by name, so a domain over int4
/// is not int4 here.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TypeRef {
    Builtin(SqlType),
    User(String),
}

impl TypeRef {
    /// The name PostgreSQL prints.
    pub fn name(&self) -> String {
        match self {
            TypeRef::Builtin(t) => t.pg_name().to_string(),
            TypeRef::User(n) => n.clone(),
        }
    }

    fn key(&self) -> String {
        match self {
            TypeRef::Builtin(t) => t.sql_name().to_lowercase(),
            TypeRef::User(n) => format!("u:{n}"),
        }
    }
}

/// A function an operator, operator class or cast calls: a user function
/// of the database by name and argument types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionRef {
    pub name: String,
    pub args: Vec<TypeRef>,
}

/// `CREATE OPERATOR name (LEFTARG, RIGHTARG, FUNCTION, COMMUTATOR, NEGATOR …)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorDef {
    /// From the id generator tables use (`pg_operator.oid`).
    pub id: u32,
    pub database: String,
    /// The operator's symbol (`=`, `<>`, `===`).
    pub name: String,
    /// None for a prefix operator.
    pub left: Option<TypeRef>,
    pub right: TypeRef,
    pub function: String,
    pub commutator: Option<String>,
    pub negator: Option<String>,
}

/// One `FUNCTION n f(types)` of an operator class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupportFunction {
    pub number: u64,
    pub function: FunctionRef,
}

/// `CREATE OPERATOR CLASS name [DEFAULT] FOR TYPE t USING method AS …`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpClassDef {
    pub id: u32,
    pub database: String,
    pub name: String,
    /// `hash`, `btree`, … (lower case).
    pub method: String,
    pub for_type: TypeRef,
    pub default: bool,
    /// (strategy number, operator symbol).
    pub operators: Vec<(u64, String)>,
    pub functions: Vec<SupportFunction>,
}

impl OpClassDef {
    /// Support function `n` (a hash class's 2 is the extended hash).
    pub fn support(&self, n: u64) -> Option<&FunctionRef> {
        self.functions.iter().find(|f| f.number == n).map(|f| &f.function)
    }
}

/// How a cast may be applied (`pg_cast.castcontext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CastContext {
    Explicit,
    Assignment,
    Implicit,
}

/// `CREATE CAST (source AS target) WITH FUNCTION f | WITHOUT FUNCTION | WITH INOUT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CastDef {
    pub id: u32,
    pub database: String,
    pub source: TypeRef,
    pub target: TypeRef,
    /// None: WITHOUT FUNCTION (the bits are the value) or WITH INOUT.
    pub function: Option<FunctionRef>,
    /// WITH INOUT: through the source's output and the target's input.
    pub inout: bool,
    pub context: CastContext,
}

/// One object of this module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum OperatorObject {
    Operator(OperatorDef),
    OpClass(OpClassDef),
    Cast(CastDef),
}

impl OperatorObject {
    /// The catalog key: `opr/<db>/<kind>/…`, unique per PostgreSQL's identity
    /// of each (an operator by name and argument types, a class by method and
    /// name, a cast by its two types).
    pub fn key(&self) -> String {
        match self {
            OperatorObject::Operator(o) => operator_key(&o.database, &o.name, o.left.as_ref(), &o.right),
            OperatorObject::OpClass(c) => opclass_key(&c.database, &c.method, &c.name),
            OperatorObject::Cast(c) => cast_key(&c.database, &c.source, &c.target),
        }
    }
}

pub fn operator_key(database: &str, name: &str, left: Option<&TypeRef>, right: &TypeRef) -> String {
    let l = left.map_or("none".to_string(), TypeRef::key);
    format!("{OPERATOR_PREFIX}{database}/operator/{name}/{l}/{}", right.key())
}

pub fn opclass_key(database: &str, method: &str, name: &str) -> String {
    format!("{OPERATOR_PREFIX}{database}/opclass/{method}/{name}")
}

pub fn cast_key(database: &str, source: &TypeRef, target: &TypeRef) -> String {
    format!("{OPERATOR_PREFIX}{database}/cast/{}/{}", source.key(), target.key())
}

impl Catalog {
    /// Record an object (replacing one of the same key); returns the one it
    /// replaced. A new object gets an id.
    pub fn put_operator_object(&self, mut obj: OperatorObject) -> Result<(OperatorObject, Option<OperatorObject>)> {
        let key = obj.key();
        let mut st = self.state.write();
        let id = match &mut obj {
            OperatorObject::Operator(o) => &mut o.id,
            OperatorObject::OpClass(c) => &mut c.id,
            OperatorObject::Cast(c) => &mut c.id,
        };
        if *id == 0 {
            *id = self.next_table_id()?;
        }
        self.put(key.clone(), serde_json::to_vec(&obj).expect("an operator object serializes"))?;
        let old = st.operators.insert(key, obj.clone());
        Ok((obj, old))
    }

    /// Remove an object by key; returns it.
    pub fn drop_operator_object(&self, key: &str) -> Result<Option<OperatorObject>> {
        let mut st = self.state.write();
        let Some(old) = st.operators.remove(key) else { return Ok(None) };
        self.del(key.to_string())?;
        Ok(Some(old))
    }

    pub fn operator_object(&self, key: &str) -> Option<OperatorObject> {
        self.state.read().operators.get(key).cloned()
    }

    /// The operators of a database named `name` (every argument type).
    pub fn operators_named(&self, database: &str, name: &str) -> Vec<OperatorDef> {
        let prefix = format!("{OPERATOR_PREFIX}{database}/operator/{name}/");
        self.state
            .read()
            .operators
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(_, o)| match o {
                OperatorObject::Operator(o) if o.name == name => Some(o.clone()),
                _ => None,
            })
            .collect()
    }

    /// An operator class of a database by access method and name.
    pub fn opclass(&self, database: &str, method: &str, name: &str) -> Option<OpClassDef> {
        match self.operator_object(&opclass_key(database, method, name)) {
            Some(OperatorObject::OpClass(c)) => Some(c),
            _ => None,
        }
    }

    /// A cast of a database between two types.
    pub fn cast(&self, database: &str, source: &TypeRef, target: &TypeRef) -> Option<CastDef> {
        match self.operator_object(&cast_key(database, source, target)) {
            Some(OperatorObject::Cast(c)) => Some(c),
            _ => None,
        }
    }

    /// Every object of a database (its drop takes them).
    pub(super) fn drop_database_operators(&self, st: &mut super::State, database: &str) -> Result<()> {
        let prefix = format!("{OPERATOR_PREFIX}{database}/");
        let keys: Vec<String> = st.operators.keys().filter(|k| k.starts_with(&prefix)).cloned().collect();
        for k in keys {
            st.operators.remove(&k);
            self.del(k)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_objects_survive_a_reopen_and_go_with_their_database() {
        let dir = tempfile::tempdir().unwrap();
        let class = OpClassDef {
            id: 0,
            database: "public".into(),
            name: "c".into(),
            method: "hash".into(),
            for_type: TypeRef::Builtin(SqlType::Int4),
            default: false,
            operators: vec![(1, "=".into())],
            functions: vec![SupportFunction {
                number: 2,
                function: FunctionRef { name: "h".into(), args: vec![TypeRef::Builtin(SqlType::Int4), TypeRef::Builtin(SqlType::Int8)] },
            }],
        };
        let op = OperatorDef {
            id: 0,
            database: "public".into(),
            name: "=".into(),
            left: Some(TypeRef::User("d".into())),
            right: TypeRef::User("d".into()),
            function: "f".into(),
            commutator: None,
            negator: None,
        };
        {
            let cat = Catalog::open(dir.path()).unwrap();
            let (made, old) = cat.put_operator_object(OperatorObject::OpClass(class.clone())).unwrap();
            assert!(old.is_none());
            assert!(matches!(made, OperatorObject::OpClass(c) if c.id != 0));
            cat.put_operator_object(OperatorObject::Operator(op)).unwrap();
        }
        let cat = Catalog::open(dir.path()).unwrap();
        let c = cat.opclass("public", "hash", "c").unwrap();
        assert_eq!(c.support(2).unwrap().name, "h");
        assert_eq!(cat.operators_named("public", "=").len(), 1);
        assert!(cat.operators_named("public", "<>").is_empty());
        cat.drop_database("public").unwrap();
        assert!(cat.opclass("public", "hash", "c").is_none());
    }
}
