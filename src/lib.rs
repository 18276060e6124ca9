//! weir: a time-series database that speaks the PostgreSQL protocol.
//!
//! Layers point one way: `server → sql → planner → exec → storage`;
//! `parser` (text → statements) is used by `sql` and `planner`;
//! `catalog` sits below everything that needs names.

pub mod catalog;
pub mod config;
pub mod error;
pub mod exec;
pub mod failpoint;
pub mod flow;
pub mod notify;
pub mod parser;
pub mod planner;
pub mod server;
pub mod sled_open;
pub mod sql;
pub mod storage;
pub mod stream;
pub mod tql;
pub mod types;
