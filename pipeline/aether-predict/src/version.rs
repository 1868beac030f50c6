//! Version order as the reference AutoTuner compares Spark and plugin versions: Maven's
//! `ComparableVersion` rules (maven-artifact's documented ordering), written here from that
//! documentation.
//!
//! A version is split at `.`, `-` and at every change between letters and digits; a `-` (and a
//! change between letters and digits) opens a sub-list that holds the rest. Numbers compare as
//! numbers; words by their known order `alpha` (`a1`) < `beta` (`b1`) < `milestone` (`m1`) <
//! `rc` = `cr` < `snapshot` < the release (`""`, `ga`, `final`, `release`) < `sp`, any other
//! word after all of them (alphabetically). So `3.5.2-rc1` < `3.5.2` < `3.5.2-amzn-0`, and
//! `4.0.0-preview2` is above `4.0.0` (an unknown word). Trailing zeros and release words go
//! (`1.0.0` = `1` = `1-ga`).

use std::cmp::Ordering;

#[derive(Clone, Debug, PartialEq)]
enum Item {
    Int(u128),
    Word(String),
    List(Vec<Item>),
}

const QUALIFIERS: [&str; 7] = ["alpha", "beta", "milestone", "rc", "snapshot", "", "sp"];
const RELEASE: usize = 5;

/// A word's place in the order: a known qualifier's index, else after all of them.
fn rank(word: &str) -> (usize, &str) {
    match QUALIFIERS.iter().position(|q| *q == word) {
        Some(i) => (i, ""),
        None => (QUALIFIERS.len(), word),
    }
}

fn word(w: &str, followed_by_digit: bool) -> Item {
    let w = match (w, followed_by_digit) {
        ("a", true) => "alpha",
        ("b", true) => "beta",
        ("m", true) => "milestone",
        ("ga" | "final" | "release", _) => "",
        ("cr", _) => "rc",
        (w, _) => w,
    };
    Item::Word(w.to_string())
}

fn item(digits: bool, text: &str) -> Item {
    if digits {
        // more digits than u128 holds: the largest (no version has them)
        Item::Int(text.parse().unwrap_or(u128::MAX))
    } else {
        word(text, false)
    }
}

impl Item {
    fn is_null(&self) -> bool {
        match self {
            Item::Int(n) => *n == 0,
            Item::Word(w) => w.is_empty(),
            Item::List(l) => l.is_empty(),
        }
    }

    /// Against nothing (the other version ended).
    fn against_none(&self) -> Ordering {
        match self {
            Item::Int(n) => n.cmp(&0),
            Item::Word(w) => rank(w).cmp(&(RELEASE, "")),
            Item::List(l) => l.first().map_or(Ordering::Equal, Item::against_none),
        }
    }

    fn order(&self, other: &Item) -> Ordering {
        use Item::*;
        match (self, other) {
            (Int(a), Int(b)) => a.cmp(b),
            (Int(_), _) => Ordering::Greater,
            (Word(_), Int(_)) => Ordering::Less,
            (Word(a), Word(b)) => rank(a).cmp(&rank(b)),
            (Word(_), List(_)) => Ordering::Less,
            (List(_), Int(_)) => Ordering::Less,
            (List(_), Word(_)) => Ordering::Greater,
            (List(a), List(b)) => lists(a, b),
        }
    }
}

fn lists(a: &[Item], b: &[Item]) -> Ordering {
    for i in 0..a.len().max(b.len()) {
        let o = match (a.get(i), b.get(i)) {
            (Some(l), Some(r)) => l.order(r),
            (Some(l), None) => l.against_none(),
            (None, Some(r)) => r.against_none().reverse(),
            (None, None) => Ordering::Equal,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The list `depth` sub-lists down (each sub-list is its parent's last item).
fn at(root: &mut Vec<Item>, depth: usize) -> &mut Vec<Item> {
    let mut cur = root;
    for _ in 0..depth {
        cur = match cur.last_mut() {
            Some(Item::List(l)) => l,
            _ => unreachable!("a sub-list is its parent's last item"),
        };
    }
    cur
}

/// Trailing nulls go (past sub-lists, which are kept).
fn normalize(list: &mut Vec<Item>) {
    let mut i = list.len();
    while i > 0 {
        i -= 1;
        if list[i].is_null() {
            list.remove(i);
        } else if !matches!(list[i], Item::List(_)) {
            break;
        }
    }
}

fn parse(version: &str) -> Vec<Item> {
    let v = version.trim().to_lowercase();
    let mut root = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut digits = false;
    for (i, c) in v.char_indices() {
        match c {
            '.' | '-' => {
                let it = if i == start {
                    Item::Int(0)
                } else {
                    item(digits, &v[start..i])
                };
                at(&mut root, depth).push(it);
                start = i + 1;
                if c == '-' {
                    at(&mut root, depth).push(Item::List(Vec::new()));
                    depth += 1;
                }
            }
            c if c.is_ascii_digit() => {
                if !digits && i > start {
                    at(&mut root, depth).push(word(&v[start..i], true));
                    start = i;
                    at(&mut root, depth).push(Item::List(Vec::new()));
                    depth += 1;
                }
                digits = true;
            }
            _ => {
                if digits && i > start {
                    at(&mut root, depth).push(item(true, &v[start..i]));
                    start = i;
                    at(&mut root, depth).push(Item::List(Vec::new()));
                    depth += 1;
                }
                digits = false;
            }
        }
    }
    if v.len() > start {
        at(&mut root, depth).push(item(digits, &v[start..]));
    }
    for d in (0..=depth).rev() {
        normalize(at(&mut root, d));
    }
    root
}

/// `a` against `b` in Maven's version order.
pub fn compare(a: &str, b: &str) -> Ordering {
    lists(&parse(a), &parse(b))
}

/// `version >= min` (`min` as numbers, `[3, 2, 0]` for 3.2.0).
pub fn at_least(version: &str, min: &[i64]) -> bool {
    let min: Vec<String> = min.iter().map(|n| n.to_string()).collect();
    compare(version, &min.join(".")) != Ordering::Less
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maven_order() {
        // each one below the next (Maven's documented examples, and the versions logs carry)
        let order = [
            "1-alpha-1",
            "1.0alpha2",
            "1-beta",
            "1-b2",
            "1-milestone",
            "1-m2",
            "1-rc",
            "1-cr2",
            "1-snapshot",
            "1",
            "1-sp",
            "1-abc",
            "1-xyz",
            "1.0.1",
            "1.1",
            "1.9",
            "1.10",
            "2",
        ];
        for w in order.windows(2) {
            assert_eq!(compare(w[0], w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
            assert_eq!(
                compare(w[1], w[0]),
                Ordering::Greater,
                "{} > {}",
                w[1],
                w[0]
            );
        }
        for (a, b) in [
            ("1.0.0", "1"),
            ("1-ga", "1"),
            ("1.0-FINAL", "1"),
            ("1-CR1", "1-rc1"),
        ] {
            assert_eq!(compare(a, b), Ordering::Equal, "{a} = {b}");
        }
    }

    #[test]
    fn spark_and_plugin_versions() {
        assert!(!at_least("3.5.2-rc1", &[3, 5, 2]));
        assert!(at_least("3.5.2-rc1", &[3, 5, 0]));
        assert!(!at_least("3.5.0-rc1", &[3, 5, 0]));
        assert!(at_least("3.3.0-amzn-0", &[3, 3, 0]));
        assert!(at_least("3.3.0-amzn-0", &[3, 2, 0]));
        assert!(!at_least("25.06.0-SNAPSHOT", &[25, 6, 0]));
        assert!(at_least("25.08.0", &[25, 6, 0]));
        // an unknown word is above the release, as in the reference
        assert!(at_least("4.0.0-preview2", &[4, 0, 0]));
        assert!(!at_least("4.0.0-preview2", &[4, 0, 1]));
        assert!(!at_least("", &[3, 2, 0]));
        assert!(!at_least("unknown", &[3, 2, 0]));
    }
}
