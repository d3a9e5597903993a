//! The one switch between the fast kernels and their plain references.

use std::sync::OnceLock;

/// Which version of every kernel runs.
///
/// `Fast` (the default) runs the vectorized, tiled and threaded kernels;
/// `Reference` runs each kernel's plain version, a loop written to be read
/// (its module's `reference` functions). Chosen once per process by the
/// environment variable `LINGO_KERNELS` (`fast` or `reference`; unset or
/// empty is `fast`): a reader can run any lingo program on the code they
/// read, and see what the fast kernels buy.
///
/// ```
/// use lingo_kernels::Kernels;
/// assert_eq!(Kernels::parse("reference"), Ok(Kernels::Reference));
/// assert_eq!(Kernels::parse(""), Ok(Kernels::Fast));
/// assert!(Kernels::parse("slow").unwrap_err().contains("LINGO_KERNELS"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// The fast kernels.
    Fast,
    /// The plain reference kernels.
    Reference,
}

impl Kernels {
    /// The name of the environment variable that chooses.
    pub const VARIABLE: &str = "LINGO_KERNELS";

    /// Reads a value of `LINGO_KERNELS`; an error names the variable and
    /// the values it takes.
    ///
    /// ```
    /// assert_eq!(lingo_kernels::Kernels::parse("fast"), Ok(lingo_kernels::Kernels::Fast));
    /// ```
    pub fn parse(value: &str) -> Result<Kernels, String> {
        match value.trim() {
            "" | "fast" => Ok(Kernels::Fast),
            "reference" => Ok(Kernels::Reference),
            other => Err(format!("{} must be `fast` or `reference`, not `{other}`", Kernels::VARIABLE)),
        }
    }

    /// The choice `LINGO_KERNELS` makes in this process's environment. A
    /// program checks it once at its start to report a bad value (the
    /// `lingo` command does); the kernels themselves read it through
    /// [`active`].
    ///
    /// ```
    /// // The tests run without the variable, or with a valid value.
    /// assert!(lingo_kernels::Kernels::from_env().is_ok());
    /// ```
    pub fn from_env() -> Result<Kernels, String> {
        match std::env::var(Kernels::VARIABLE) {
            Ok(value) => Kernels::parse(&value),
            Err(std::env::VarError::NotPresent) => Ok(Kernels::Fast),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{} is not UTF-8", Kernels::VARIABLE)),
        }
    }
}

/// The kernels this process runs, read from `LINGO_KERNELS` on first use.
///
/// # Panics
///
/// On a value [`Kernels::parse`] rejects, with its message: a program that
/// must not panic checks [`Kernels::from_env`] first.
///
/// ```
/// let _ = lingo_kernels::active(); // Kernels::Fast unless LINGO_KERNELS=reference
/// ```
pub fn active() -> Kernels {
    static ACTIVE: OnceLock<Kernels> = OnceLock::new();
    *ACTIVE.get_or_init(|| Kernels::from_env().unwrap_or_else(|e| panic!("{e}")))
}

/// Whether the plain reference kernels run ([`active`] is `Reference`).
///
/// ```
/// assert_eq!(lingo_kernels::reference(), lingo_kernels::active() == lingo_kernels::Kernels::Reference);
/// ```
#[inline]
pub fn reference() -> bool {
    active() == Kernels::Reference
}
