//! Permission bits (`PermName.java`) and topic system flags (`TopicSysFlag.java`).
//!
//! May import: nothing outside `model/` (the area's rule: docs/architecture.md).

pub const PRIORITY: i32 = 0x8;
pub const READ: i32 = 0x4;
pub const WRITE: i32 = 0x2;
pub const INHERIT: i32 = 0x1;

/// `TopicSysFlag.FLAG_UNIT`.
pub const FLAG_UNIT: i32 = 0x1;
/// `TopicSysFlag.FLAG_UNIT_SUB`.
pub const FLAG_UNIT_SUB: i32 = 0x2;

pub fn is_readable(perm: i32) -> bool {
    perm & READ == READ
}

pub fn is_writeable(perm: i32) -> bool {
    perm & WRITE == WRITE
}

/// `PermName.perm2String`: `RWX` style, e.g. `RW-`.
pub fn to_string(perm: i32) -> String {
    let mut s = String::with_capacity(3);
    s.push(if is_readable(perm) { 'R' } else { '-' });
    s.push(if is_writeable(perm) { 'W' } else { '-' });
    s.push(if perm & INHERIT == INHERIT { 'X' } else { '-' });
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn perm_strings() {
        assert_eq!(super::to_string(6), "RW-");
        assert_eq!(super::to_string(7), "RWX");
        assert!(!super::is_writeable(4));
    }
}
