//! The iteration order of a Scala 2.12 `mutable.HashMap[Int, _]`, which the reference profiler
//! (built with Scala 2.12) follows when it folds per-stage statistics with integer division: the
//! same stages folded in another order can differ in the last digit.
//!
//! The map is an open hash table of 16 buckets that doubles when it holds more than 3/4 of its
//! size; a key's bucket is the top bits of its hash (an Int hashes to itself) after Scala's
//! `byteswap32` and a rotation by the initial table's seed (4); a new entry goes to the front of
//! its bucket, a resize moves the buckets from the last to the first, each front to back, and
//! iteration runs from the last bucket to the first.

const INITIAL_BUCKETS: usize = 16;
/// `Integer.bitCount(15)`: the seed Scala computes for the initial table and keeps.
const SEED: u32 = 4;

fn byteswap32(v: i32) -> i32 {
    const K: i32 = 0x9e37_75cd_u32 as i32;
    v.wrapping_mul(K).swap_bytes().wrapping_mul(K)
}

fn bucket(key: i32, buckets: usize) -> usize {
    let improved = (byteswap32(key) as u32).rotate_right(SEED % 32);
    let ones = (buckets - 1) as u32;
    ((improved >> ones.leading_zeros()) & ones) as usize
}

/// The positions of `keys` (distinct, in insertion order) in the order Scala iterates them.
pub fn iteration_order(keys: &[i32]) -> Vec<usize> {
    let mut table: Vec<Vec<usize>> = vec![Vec::new(); INITIAL_BUCKETS];
    let mut threshold = INITIAL_BUCKETS * 3 / 4;
    for (i, &k) in keys.iter().enumerate() {
        let b = bucket(k, table.len());
        table[b].insert(0, i);
        if i + 1 > threshold {
            let size = table.len() * 2;
            let mut grown: Vec<Vec<usize>> = vec![Vec::new(); size];
            for b in table.iter().rev() {
                for &e in b {
                    grown[bucket(keys[e], size)].insert(0, e);
                }
            }
            table = grown;
            threshold = size * 3 / 4;
        }
    }
    table.iter().rev().flatten().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_of_the_keys() {
        for n in [0, 1, 5, 12, 13, 40] {
            let keys: Vec<i32> = (0..n).map(|k| k * 3 + 5).collect();
            let mut order = iteration_order(&keys);
            order.sort_unstable();
            assert_eq!(order, (0..n as usize).collect::<Vec<_>>());
        }
    }
}
