//! The numbers that name things: a job, one task of a job, an advance reservation.
//! Each is its own type, so that a task's number cannot be passed where a job's is
//! wanted; on the wire and in the spool each is exactly the number it wraps
//! (`#[serde(transparent)]`), so they change no byte of either.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The number itself.
            pub const fn get(self) -> $inner {
                self.0
            }
        }

        /// The bare number, as every command prints it (width and fill flags apply).
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = std::num::ParseIntError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                text.parse().map($name)
            }
        }

        impl From<$inner> for $name {
            fn from(n: $inner) -> Self {
                $name(n)
            }
        }

        impl From<$name> for $inner {
            fn from(id: $name) -> Self {
                id.0
            }
        }
    };
}

id_type!(
    /// A job's number, as `qsub` prints it (`Your job 17 ...`).
    JobId(u64)
);
id_type!(
    /// A task's number within its job (1 for a job that is no array).
    TaskId(u32)
);
id_type!(
    /// An advance reservation's number, as `qrsub` prints it.
    ArId(u64)
);

impl JobId {
    /// The job id handed out after this one.
    pub const fn next(self) -> JobId {
        JobId(self.0 + 1)
    }
}

impl ArId {
    /// The reservation id handed out after this one.
    pub const fn next(self) -> ArId {
        ArId(self.0 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_number_on_the_wire_and_on_screen() {
        for n in [0u64, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(
                crate::encode(&JobId(n)).unwrap(),
                crate::encode(&n).unwrap()
            );
            assert_eq!(crate::encode(&ArId(n)).unwrap(), crate::encode(&n).unwrap());
        }
        assert_eq!(
            crate::encode(&TaskId(70_000)).unwrap(),
            crate::encode(&70_000u32).unwrap()
        );
        assert_eq!(
            format!("{:>7}|{:020}", JobId(42), JobId(7)),
            "     42|00000000000000000007"
        );
        assert_eq!("17".parse::<JobId>(), Ok(JobId(17)));
        assert!("x".parse::<TaskId>().is_err());
        assert_eq!(JobId(9).next(), JobId(10));
    }
}
