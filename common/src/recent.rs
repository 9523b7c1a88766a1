//! Answers of the name service (accounts, group lists) kept for a while, as nscd or sssd
//! would keep them: a daemon that asks for the same user's groups on every submission
//! would otherwise pay for a walk through every NSS module each time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// How long a daemon trusts a name service answer: a user added to a Unix group is seen
/// by the master and the execds within this time.
pub const NAME_SERVICE_TTL: Duration = Duration::from_secs(60);

/// At most this many answers are kept; when full, stale ones are dropped first, then all.
const CAPACITY: usize = 4096;

/// Values looked up at most once per `ttl` for each key. Failed lookups are not kept,
/// so an account that appears is seen at the next request.
#[derive(Debug)]
pub struct Recent<K, V> {
    ttl: Duration,
    entries: HashMap<K, (Instant, V)>,
}

impl<K: Eq + Hash, V: Clone> Recent<K, V> {
    pub fn new(ttl: Duration) -> Self {
        Recent {
            ttl,
            entries: HashMap::new(),
        }
    }

    /// The value for `key`: the kept one if it is younger than the ttl, else `lookup`'s.
    pub fn get_or_lookup(&mut self, key: K, lookup: impl FnOnce() -> Option<V>) -> Option<V> {
        self.get_or_lookup_at(key, Instant::now(), lookup)
    }

    fn get_or_lookup_at(
        &mut self,
        key: K,
        now: Instant,
        lookup: impl FnOnce() -> Option<V>,
    ) -> Option<V> {
        if let Some((at, v)) = self.entries.get(&key) {
            if now.saturating_duration_since(*at) < self.ttl {
                return Some(v.clone());
            }
        }
        let value = lookup()?;
        if self.entries.len() >= CAPACITY {
            let ttl = self.ttl;
            self.entries
                .retain(|_, (at, _)| now.saturating_duration_since(*at) < ttl);
            if self.entries.len() >= CAPACITY {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (now, value.clone()));
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_looked_up_again_only_after_the_ttl() {
        let mut r = Recent::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let mut lookups = 0;
        let mut get = |r: &mut Recent<&str, u32>, at: Instant, v: u32| {
            r.get_or_lookup_at("alice", at, || {
                lookups += 1;
                Some(v)
            })
        };
        assert_eq!(get(&mut r, t0, 1), Some(1));
        assert_eq!(get(&mut r, t0 + Duration::from_secs(59), 2), Some(1));
        assert_eq!(get(&mut r, t0 + Duration::from_secs(60), 3), Some(3));
        assert_eq!(lookups, 2);
    }

    #[test]
    fn failed_lookups_are_not_kept() {
        let mut r: Recent<u32, String> = Recent::new(Duration::from_secs(60));
        assert_eq!(r.get_or_lookup(7, || None), None);
        assert_eq!(
            r.get_or_lookup(7, || Some("bob".into())),
            Some("bob".into())
        );
        assert_eq!(r.get_or_lookup(7, || None), Some("bob".into()));
    }

    #[test]
    fn a_full_cache_drops_stale_answers_then_everything() {
        let mut r = Recent::new(Duration::from_secs(1));
        let t0 = Instant::now();
        for k in 0..CAPACITY {
            r.get_or_lookup_at(k, t0, || Some(k));
        }
        let later = t0 + Duration::from_secs(2);
        r.get_or_lookup_at(CAPACITY, later, || Some(0));
        assert_eq!(r.entries.len(), 1);
        for k in 0..CAPACITY {
            r.get_or_lookup_at(k, later, || Some(k));
        }
        assert_eq!(r.entries.len(), 1);
    }
}
