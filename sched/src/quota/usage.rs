//! The usage counters of one cycle or of the book: per (rule, consumer, attribute),
//! what is used, in one vector, with a small map from key to counter.

use std::collections::HashMap;

/// One counter of usage: a rule of a set, a consumer (the members of the rule's
/// expanded filters, as name ids; 0 where a filter is not expanded), a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UsageKey {
    pub set: u32,
    pub rule: u32,
    /// user, project, pe, queue, host
    pub members: [u32; 5],
    pub attr: u32,
}

impl std::hash::Hash for UsageKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let m = &self.members;
        let pair = |a: u32, b: u32| (u64::from(a) << 32) | u64::from(b);
        state.write_u64(pair(self.set, self.rule));
        state.write_u64(pair(m[0], m[1]));
        state.write_u64(pair(m[2], m[3]));
        state.write_u64(pair(m[4], self.attr));
    }
}

/// A quick hasher for small fixed keys (the counters are looked up in the hot path).
#[derive(Default, Clone, Copy)]
pub struct SmallHasher(u64);

impl std::hash::Hasher for SmallHasher {
    fn finish(&self) -> u64 {
        // MurmurHash3's final mix: every input bit reaches the low bits the table
        // indexes by (the multiply-rotate steps alone leave them to the last word).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

pub type SmallMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<SmallHasher>>;

/// What running jobs use under every rule. Counters are interned so that a cycle
/// checks them by index; consumer names (users, projects, PEs, queues, hosts) by id.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    names: HashMap<String, u32, foldhash::fast::RandomState>,
    name_list: Vec<String>,
    /// The counters of keys without a host of their own.
    index: SmallMap<UsageKey, usize>,
    /// The counters of keys with a host of their own (a rule's `hosts {...}`): per key
    /// without its host, by the host's name id, each counter's index + 1 (0: none yet).
    /// A cycle makes one for every such rule and host it checks and cannot leave out
    /// (up to 100,000 of them in a big cluster): an array by host costs a fraction of a
    /// hash table of them all.
    /// The arrays are `rows`, found by key here ([`Usage::host_row`]).
    by_host: SmallMap<UsageKey, u32>,
    rows: Vec<Vec<u32>>,
    keys: Vec<UsageKey>,
    used: Vec<f64>,
}

impl Usage {
    /// Room for this many counters without growing (a cycle interns the counters of
    /// every rule it checks: as many as the cycle before, as a rule).
    pub fn reserve(&mut self, counters: usize) {
        let more = counters.saturating_sub(self.keys.len());
        self.keys.reserve(more);
        self.used.reserve(more);
    }

    /// How many counters there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The id of a consumer name (from 1).
    pub fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.names.get(name) {
            return n;
        }
        self.name_list.push(name.to_string());
        let id = self.name_list.len() as u32;
        self.names.insert(name.to_string(), id);
        id
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        match id {
            0 => "",
            n => self
                .name_list
                .get(n as usize - 1)
                .map_or("", String::as_str),
        }
    }

    /// The consumer as SGE writes it: `user1/////`, `////vm/`.
    pub fn consumer_text(&self, key: &UsageKey) -> String {
        key.members
            .iter()
            .map(|&m| format!("{}/", self.name(m)))
            .collect()
    }

    /// The counter of a key, created at zero.
    pub fn slot(&mut self, key: UsageKey) -> usize {
        let host = key.members[4] as usize;
        if host == 0 {
            return match self.index.entry(key) {
                std::collections::hash_map::Entry::Occupied(n) => *n.get(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    self.keys.push(key);
                    self.used.push(0.0);
                    *v.insert(self.used.len() - 1)
                }
            };
        }
        let mut rest = key;
        rest.members[4] = 0;
        let row = self.host_row(rest);
        self.slot_in_row(row, key)
    }

    /// The row of the counters by host of a key without its host (`members[4]` 0).
    pub fn host_row(&mut self, rest: UsageKey) -> u32 {
        let rows = &mut self.rows;
        *self.by_host.entry(rest).or_insert_with(|| {
            rows.push(Vec::new());
            rows.len() as u32 - 1
        })
    }

    /// The counter of a key with a host of its own, created at zero, in the row of
    /// its key without the host ([`Usage::host_row`]: a caller that meets the same
    /// rule on many hosts looks the row up once).
    pub fn slot_in_row(&mut self, row: u32, key: UsageKey) -> usize {
        let host = key.members[4] as usize;
        let names = self.name_list.len();
        let by_host = &mut self.rows[row as usize];
        if by_host.len() <= host {
            by_host.resize(host.max(names) + 1, 0);
        }
        match by_host[host] {
            0 => {
                self.keys.push(key);
                self.used.push(0.0);
                by_host[host] = self.used.len() as u32;
                self.used.len() - 1
            }
            n => n as usize - 1,
        }
    }

    /// The index of a key's counter, if it has one.
    pub(crate) fn index_of(&self, key: &UsageKey) -> Option<usize> {
        let host = key.members[4] as usize;
        if host == 0 {
            return self.index.get(key).copied();
        }
        let mut rest = *key;
        rest.members[4] = 0;
        let row = *self.by_host.get(&rest)?;
        match self.rows[row as usize].get(host).copied()? {
            0 => None,
            n => Some(n as usize - 1),
        }
    }

    /// The most any host's counter of a key without its host uses (0 without one).
    pub fn most_on_any_host(&self, rest: &UsageKey) -> f64 {
        let Some(&row) = self.by_host.get(rest) else {
            return 0.0;
        };
        self.rows[row as usize]
            .iter()
            .filter(|&&n| n != 0)
            .map(|&n| self.used[n as usize - 1])
            .fold(0.0, f64::max)
    }

    /// What a key with a host of its own uses, its row known ([`Usage::host_row`]).
    pub fn get_in_row(&self, row: u32, key: &UsageKey) -> f64 {
        let host = key.members[4] as usize;
        match self.rows[row as usize].get(host).copied() {
            None | Some(0) => 0.0,
            Some(n) => self.used[n as usize - 1],
        }
    }

    pub fn get(&self, key: &UsageKey) -> f64 {
        self.index_of(key).map_or(0.0, |n| self.used[n])
    }

    /// Add to a counter (a credit with a negative amount); what is left of a credit
    /// down to rounding is zero.
    pub fn add(&mut self, slot: usize, amount: f64) {
        self.used[slot] += amount;
        if self.used[slot].abs() < 1e-9 {
            self.used[slot] = 0.0;
        }
    }

    /// Every counter back to zero (their slots stay).
    pub fn zero_all(&mut self) {
        self.used.fill(0.0);
    }

    pub fn at(&self, slot: usize) -> f64 {
        self.used[slot]
    }

    pub fn key(&self, slot: usize) -> &UsageKey {
        &self.keys[slot]
    }

    /// Every counter above zero.
    pub fn nonzero(&self) -> impl Iterator<Item = (&UsageKey, f64)> {
        self.keys
            .iter()
            .zip(self.used.iter().copied())
            .filter(|(_, u)| *u > 1e-9)
    }

    /// Every counter above zero as (set, rule, consumer text, attribute, amount), for
    /// comparing books whose name ids differ.
    pub fn readable(&self) -> std::collections::BTreeMap<(u32, u32, String, u32), f64> {
        self.nonzero()
            .map(|(k, v)| ((k.set, k.rule, self.consumer_text(k), k.attr), v))
            .collect()
    }
}
