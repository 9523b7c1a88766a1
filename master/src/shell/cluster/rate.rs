//! The per-user request rate limit (`MAX_REQUESTS_PER_USER=N` in `qmaster_params`; off
//! by default): at most N client requests of one user in any second of the master's
//! clock, managers exempt, so that one user's loop cannot take the master from the
//! others. Pure: the caller gives the time.

use std::collections::HashMap;

/// `MAX_REQUESTS_PER_USER` from `qmaster_params` (`KEY=VALUE` items separated by commas
/// or blanks); None (no limit) when absent, 0 or not a number.
pub fn max_requests_per_user(qmaster_params: &str) -> Option<u32> {
    qmaster_params
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|item| item.split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("MAX_REQUESTS_PER_USER"))
        .and_then(|(_, v)| v.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
}

/// What each user asked in the current second.
#[derive(Debug, Default)]
pub struct RequestRate {
    second: u64,
    counts: HashMap<String, u32>,
}

impl RequestRate {
    /// May `user` make one more request in second `now` under `limit`? Counted if so.
    pub fn admit(&mut self, user: &str, now: u64, limit: u32) -> bool {
        if now != self.second {
            self.second = now;
            self.counts.clear();
        }
        match self.counts.get_mut(user) {
            Some(n) if *n >= limit => false,
            Some(n) => {
                *n += 1;
                true
            }
            None => {
                self.counts.insert(user.to_string(), 1);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_user_gets_its_limit_per_second() {
        let mut r = RequestRate::default();
        let taken: Vec<bool> = (0..5).map(|_| r.admit("alice", 10, 3)).collect();
        assert_eq!(taken, [true, true, true, false, false]);
        // Another user has a count of its own; the next second starts afresh.
        assert!(r.admit("bob", 10, 3));
        assert!(r.admit("alice", 11, 3));
    }

    #[test]
    fn the_limit_is_read_from_qmaster_params() {
        let cases = [
            ("none", None),
            ("MAX_REQUESTS_PER_USER=50", Some(50)),
            ("MAX_SCRIPT_SIZE=4M,max_requests_per_user=7", Some(7)),
            ("MAX_REQUESTS_PER_USER=0", None),
            ("MAX_REQUESTS_PER_USER=many", None),
        ];
        for (params, want) in cases {
            assert_eq!(max_requests_per_user(params), want, "{params}");
        }
    }
}
