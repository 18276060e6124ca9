//! The one error type of weir, with one mapping to SQLSTATE.
//!
//! Every layer returns `WeirError`; the server turns it into an
//! ErrorResponse. Messages follow PostgreSQL's style: lowercase, no full
//! stop, then an optional detail and hint.

use std::fmt;

/// What went wrong, by layer; decides the SQLSTATE users see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Syntax,
    UndefinedTable,
    UndefinedColumn,
    UndefinedFunction,
    UndefinedObject,
    UndefinedDatabase,
    UndefinedSchema,
    DuplicateTable,
    DuplicateObject,
    DuplicateDatabase,
    /// 42P06: CREATE SCHEMA of a name that exists.
    DuplicateSchema,
    /// 42712: a table name twice in one FROM level.
    DuplicateAlias,
    /// 42P05: PREPARE of a name that exists.
    DuplicatePreparedStatement,
    /// 26000: EXECUTE / DEALLOCATE of a name that does not exist.
    InvalidSqlStatementName,
    DuplicateColumn,
    InvalidColumnReference,
    InvalidTableDefinition,
    AmbiguousColumn,
    InvalidText,
    DivisionByZero,
    NumericOutOfRange,
    FeatureNotSupported,
    DatatypeMismatch,
    /// 22025: a bad escape in a LIKE pattern or ESCAPE clause.
    InvalidEscapeSequence,
    /// 42846: no cast between the two types.
    CannotCoerce,
    Grouping,
    /// 42P20: a window clause PostgreSQL refuses.
    Windowing,
    /// 22004: a NULL where PostgreSQL refuses one.
    NullValueNotAllowed,
    /// 22013: a negative or NULL window frame offset.
    InvalidPrecedingOrFollowingSize,
    NotNullViolation,
    /// 23514: a CHECK or partition constraint ("no partition … found for row").
    CheckViolation,
    /// 42P17: an invalid object definition (overlapping partition bounds).
    InvalidObjectDefinition,
    UniqueViolation,
    InvalidParameterValue,
    CardinalityViolation,
    InFailedTransaction,
    /// 25001: not allowed inside a transaction block.
    ActiveSqlTransaction,
    /// 25P01: needs a transaction block.
    NoActiveSqlTransaction,
    /// 25006: a write in a READ ONLY transaction.
    ReadOnlySqlTransaction,
    /// 25P03: idle_in_transaction_session_timeout.
    IdleInTransactionTimeout,
    /// 3B001: no such savepoint.
    InvalidSavepoint,
    /// 53400: a configured limit (e.g. a transaction's buffered bytes).
    ConfigurationLimitExceeded,
    QueryCanceled,
    InvalidDatetime,
    /// 22008: a date/time/interval value out of range.
    DatetimeFieldOverflow,
    /// 22015: an interval field beyond its range.
    IntervalFieldOverflow,
    /// 22009: a time zone offset beyond ±15:59:59.
    InvalidTimeZoneDisplacement,
    /// 42809: e.g. DISTINCT or ORDER BY in a call of a function that is not
    /// an aggregate.
    WrongObjectType,
    /// 2201B: a regular expression that does not compile.
    InvalidRegularExpression,
    /// 22011: a bad substring length.
    SubstringError,
    ArraySubscriptError,
    InvalidUseOfEscapeCharacter,
    /// 2201E: logarithm of zero or a negative number.
    InvalidArgumentForLogarithm,
    /// 2201F: square root of a negative number, bad powers.
    InvalidArgumentForPowerFunction,
    /// 2201G: width_bucket's count or bounds.
    InvalidArgumentForWidthBucket,
    StringDataTooLong,
    ProgramLimitExceeded,
    /// The query's memory budget is exhausted (53200).
    OutOfMemory,
    /// Nesting too deep to evaluate (54001, `stack depth limit exceeded`).
    StackDepthExceeded,
    BadCopyFileFormat,
    /// 22P03: a binary (`*_recv`) value with bytes left over.
    InvalidBinaryRepresentation,
    /// 08P01: a binary value cut short ("insufficient data left in message").
    ProtocolViolation,
    /// 22021: bytes that are not UTF-8.
    CharacterNotInRepertoire,
    Storage,
    Corrupt,
    /// Incremental read below the region's readable sequence (seed 001).
    IncrementalQueryStale,
    SnapshotFenceStale,
    SequenceRangeUnsupported,
    /// 42501: permission denied.
    InsufficientPrivilege,
    /// 28000: invalid authorization specification (unknown role, no hba rule).
    InvalidAuthorization,
    /// 28P01: password authentication failed.
    InvalidPassword,
    /// 2BP01: a role other objects depend on.
    DependentObjectsStillExist,
    /// 42939: a reserved name.
    ReservedName,
    /// 55006: e.g. dropping the current user.
    ObjectInUse,
    /// 55000: e.g. CREATE STREAM with no snode.
    ObjectNotInPrerequisiteState,
    /// 08006: a connection weir opened failed (e.g. a stream's NOTIFY URL).
    ConnectionFailure,
    /// 0LP01: e.g. a circular role membership.
    InvalidGrantOperation,
    /// 42P19: a WITH RECURSIVE query of a form PostgreSQL refuses.
    InvalidRecursion,
    /// 40001: a write met a table a concurrent statement rewrote or dropped (retry).
    SerializationFailure,
    /// 42723: CREATE FUNCTION of a name and argument types that exist.
    DuplicateFunction,
    /// 42P13: a function definition PostgreSQL refuses (result type mismatch).
    InvalidFunctionDefinition,
    /// 42725: a call two overloads match equally well.
    AmbiguousFunction,
    /// 2200H: nextval past a sequence's MAXVALUE / MINVALUE without CYCLE.
    SequenceGeneratorLimitExceeded,
    /// 428C9: a value for a GENERATED ALWAYS identity column.
    GeneratedAlways,
    /// 42P21: two explicit, different COLLATE clauses meet.
    CollationMismatch,
    /// P0001: PL/pgSQL's RAISE EXCEPTION.
    RaiseException,
    /// 20000: a PL/pgSQL CASE with no matching branch and no ELSE.
    CaseNotFound,
    /// P0002 / P0003: SELECT … INTO STRICT found no row / more than one.
    NoDataFound,
    TooManyRows,
    /// 2F005: a PL/pgSQL function ended without RETURN.
    FunctionExecutedNoReturn,
    Internal,
}

impl ErrorKind {
    /// The five-character SQLSTATE for this kind.
    pub fn sqlstate(self) -> &'static str {
        use ErrorKind::*;
        match self {
            Syntax => "42601",
            UndefinedTable => "42P01",
            UndefinedColumn => "42703",
            Windowing => "42P20",
            NullValueNotAllowed => "22004",
            InvalidPrecedingOrFollowingSize => "22013",
            UndefinedFunction => "42883",
            UndefinedObject => "42704",
            UndefinedDatabase => "3D000",
            UndefinedSchema => "3F000",
            DuplicateTable => "42P07",
            DuplicateObject => "42710",
            DuplicateDatabase => "42P04",
            DuplicateSchema => "42P06",
            DuplicatePreparedStatement => "42P05",
            DuplicateAlias => "42712",
            InvalidSqlStatementName => "26000",
            DuplicateColumn => "42701",
            InvalidColumnReference => "42P10",
            InvalidTableDefinition => "42P16",
            AmbiguousColumn => "42702",
            InvalidText => "22P02",
            DivisionByZero => "22012",
            NumericOutOfRange => "22003",
            FeatureNotSupported => "0A000",
            DatatypeMismatch => "42804",
            CannotCoerce => "42846",
            InvalidEscapeSequence => "22025",
            Grouping => "42803",
            NotNullViolation => "23502",
            CheckViolation => "23514",
            InvalidObjectDefinition => "42P17",
            UniqueViolation => "23505",
            InvalidParameterValue => "22023",
            CardinalityViolation => "21000",
            InFailedTransaction => "25P02",
            ActiveSqlTransaction => "25001",
            NoActiveSqlTransaction => "25P01",
            ReadOnlySqlTransaction => "25006",
            IdleInTransactionTimeout => "25P03",
            InvalidSavepoint => "3B001",
            ConfigurationLimitExceeded => "53400",
            QueryCanceled => "57014",
            InvalidDatetime => "22007",
            DatetimeFieldOverflow => "22008",
            IntervalFieldOverflow => "22015",
            InvalidTimeZoneDisplacement => "22009",
            WrongObjectType => "42809",
            InvalidRegularExpression => "2201B",
            SubstringError => "22011",
            ArraySubscriptError => "2202E",
            InvalidUseOfEscapeCharacter => "2200C",
            InvalidArgumentForLogarithm => "2201E",
            InvalidArgumentForPowerFunction => "2201F",
            InvalidArgumentForWidthBucket => "2201G",
            StringDataTooLong => "22001",
            ProgramLimitExceeded => "54000",
            OutOfMemory => "53200",
            StackDepthExceeded => "54001",
            BadCopyFileFormat => "22P04",
            InvalidBinaryRepresentation => "22P03",
            ProtocolViolation => "08P01",
            CharacterNotInRepertoire => "22021",
            Storage => "58030",
            Corrupt => "XX001",
            IncrementalQueryStale => "WR001",
            SnapshotFenceStale => "WR002",
            SequenceRangeUnsupported => "WR003",
            InsufficientPrivilege => "42501",
            InvalidAuthorization => "28000",
            InvalidPassword => "28P01",
            DependentObjectsStillExist => "2BP01",
            ReservedName => "42939",
            ObjectInUse => "55006",
            ObjectNotInPrerequisiteState => "55000",
            ConnectionFailure => "08006",
            InvalidGrantOperation => "0LP01",
            InvalidRecursion => "42P19",
            SerializationFailure => "40001",
            DuplicateFunction => "42723",
            InvalidFunctionDefinition => "42P13",
            AmbiguousFunction => "42725",
            SequenceGeneratorLimitExceeded => "2200H",
            GeneratedAlways => "428C9",
            CollationMismatch => "42P21",
            RaiseException => "P0001",
            CaseNotFound => "20000",
            NoDataFound => "P0002",
            TooManyRows => "P0003",
            FunctionExecutedNoReturn => "2F005",
            Internal => "XX000",
        }
    }
}

/// An error with a kind, a message and PostgreSQL's optional detail and hint.
#[derive(Debug, Clone)]
pub struct WeirError {
    pub kind: ErrorKind,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based character position in the statement text (the `P` field
    /// of PostgreSQL's ErrorResponse), for syntax errors.
    pub position: Option<usize>,
}

impl WeirError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        WeirError { kind, message: message.into(), detail: None, hint: None, position: None }
    }
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn sqlstate(&self) -> &'static str {
        self.kind.sqlstate()
    }
}

impl fmt::Display for WeirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for WeirError {}

pub type Result<T, E = WeirError> = std::result::Result<T, E>;

/// Shorthand constructors, one per common kind.
#[macro_export]
macro_rules! err {
    ($kind:ident, $($arg:tt)*) => {
        $crate::error::WeirError::new($crate::error::ErrorKind::$kind, format!($($arg)*))
    };
}

/// Return early with an error of the given kind.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::err!($kind, $($arg)*))
    };
}

impl From<arrow::error::ArrowError> for WeirError {
    fn from(e: arrow::error::ArrowError) -> Self {
        use arrow::error::ArrowError as A;
        match e {
            A::DivideByZero => WeirError::new(ErrorKind::DivisionByZero, "division by zero"),
            A::ArithmeticOverflow(_) => WeirError::new(ErrorKind::NumericOutOfRange, "value out of range"),
            A::CastError(m) => {
                if m.contains("Overflow") || m.contains("overflow") || m.contains("out of range") || m.contains("Can't cast value") {
                    WeirError::new(ErrorKind::NumericOutOfRange, "value out of range")
                } else {
                    WeirError::new(ErrorKind::InvalidText, m.to_lowercase())
                }
            }
            A::ComputeError(m) if m.contains("Overflow") || m.contains("overflow") => {
                WeirError::new(ErrorKind::NumericOutOfRange, "value out of range")
            }
            other => WeirError::new(ErrorKind::Internal, other.to_string()),
        }
    }
}

impl From<std::io::Error> for WeirError {
    fn from(e: std::io::Error) -> Self {
        WeirError::new(ErrorKind::Storage, format!("i/o error: {e}"))
    }
}

impl From<sled::Error> for WeirError {
    fn from(e: sled::Error) -> Self {
        WeirError::new(ErrorKind::Storage, format!("metadata store error: {e}"))
    }
}

impl From<parquet::errors::ParquetError> for WeirError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        WeirError::new(ErrorKind::Storage, format!("parquet error: {e}"))
    }
}
