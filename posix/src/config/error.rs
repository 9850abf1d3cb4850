//! What is wrong with a config file: each problem with its file, its place
//! in the file, and what it is about (the key path, for a value).

use std::fmt;

use crate::bytes::jsonpos::Path;

/// One problem (an error, or a warning) in a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    /// Line and column, when the text shows where.
    pub line: Option<(usize, usize)>,
    pub kind: ProblemKind,
}

/// What a [`Problem`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// The file could not be read (the system's reason).
    Unreadable(String),
    /// The text is not JSON (the parser's reason).
    Syntax(String),
    /// The member at `path` is wrong (or, in a warning, ignored).
    Key { path: Path, msg: String },
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProblemKind::Unreadable(e) => write!(f, "cannot read config file: {e}"),
            ProblemKind::Syntax(e) => write!(f, "invalid JSON: {e}"),
            ProblemKind::Key { path, msg } => write!(f, "{path}: {msg}"),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some((l, c)) => write!(f, "{}:{}:{}: {}", self.file, l, c, self.kind),
            None => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

/// Every error found in a config file (at least one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub Vec<Problem>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// The one problem of a file that could not be looked at.
    pub(super) fn one(file: &str, line: Option<(usize, usize)>, kind: ProblemKind) -> ConfigError {
        ConfigError(vec![Problem { file: file.to_string(), line, kind }])
    }
}

/// Why a `${VAR}` reference cannot be expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpandError {
    /// A `${` with no `}` in `text`.
    Unterminated { text: String },
    /// `${body}` names no variable.
    BadReference { body: String },
    /// `${name}` is not set and has no default.
    Unset { name: String },
    /// `${secret:NAME}` where no per-principal secret can go.
    #[cfg(feature = "secrets")]
    SecretHere { body: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::Unterminated { text } => {
                write!(f, "unterminated `${{` in {text:?} (write `$${{` for a literal `${{`)")
            }
            ExpandError::BadReference { body } => write!(
                f,
                "`${{{body}}}` is not a valid variable reference (use ${{NAME}} or ${{NAME:-default}}; `$${{` for a literal `${{`)"
            ),
            #[cfg(feature = "secrets")]
            ExpandError::SecretHere { body } => write!(
                f,
                "`${{{body}}}` names a per-principal secret, which only a server's \"env\" and \"headers\" can use"
            ),
            ExpandError::Unset { name } => write!(
                f,
                "environment variable {name} is not set (referenced as `${{{name}}}`; set it, or write `${{{name}:-default}}`)"
            ),
        }
    }
}
