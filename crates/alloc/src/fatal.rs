//! Stopping the process from inside the allocator. A check that fails in `malloc` or
//! `free` (an address that is no block of the allocator, a block freed twice, a free
//! list a write after free corrupted, an internal invariant in a debug build) must not
//! enter Rust's panic machinery: it formats its message on the heap, and unwinding out
//! of an allocator call is undefined for a C caller. So the allocation paths never
//! panic: they write one line to standard error from a buffer on the stack, with
//! `write`, and `abort`, which runs no handler of the allocator. (Indexing and
//! arithmetic on those paths cannot fail by construction; their bounds are stated
//! where they are computed.)

/// One line of at most 256 bytes, built on the stack: `handoff-alloc: ` and the parts.
pub(crate) struct Message {
    buf: [u8; 256],
    len: usize,
}

impl Message {
    /// A message that starts with `handoff-alloc: `.
    pub(crate) fn new() -> Message {
        Message {
            buf: [0; 256],
            len: 0,
        }
        .text("handoff-alloc: ")
    }

    /// Appends `s` (cut at the buffer's end).
    pub(crate) fn text(mut self, s: &str) -> Message {
        let k = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + k].copy_from_slice(&s.as_bytes()[..k]);
        self.len += k;
        self
    }

    /// Appends `a` as `0x` and lower-case hexadecimal digits.
    pub(crate) fn hex(mut self, a: usize) -> Message {
        self = self.text("0x");
        let digits = (usize::BITS as usize / 4 - (a.leading_zeros() as usize / 4)).max(1);
        for i in (0..digits).rev() {
            let d = (a >> (4 * i)) & 15;
            self = self.text(&"0123456789abcdef"[d..d + 1]);
        }
        self
    }

    /// Writes the message and a newline to standard error, and aborts.
    #[cold]
    #[inline(never)]
    pub(crate) fn abort(self) -> ! {
        let m = self.text("\n");
        // SAFETY: writes `m.len` initialised bytes of the buffer to standard error; then
        // abort, which does not return and runs no handler of this allocator.
        unsafe {
            libc::write(2, m.buf.as_ptr().cast(), m.len);
            libc::abort()
        }
    }
}

/// Stops the process with `handoff-alloc: <what>; aborting`.
#[cold]
#[inline(never)]
pub(crate) fn fatal(what: &str) -> ! {
    Message::new().text(what).text("; aborting").abort()
}

/// Stops the process: a free list links to `p`, which is no free block of the list's
/// size class.
#[cold]
#[inline(never)]
pub(crate) fn corrupt_link(p: *mut u8) -> ! {
    Message::new()
        .text("a free list links to ")
        .hex(p.addr())
        .text(", which is no free block of its size class (the program wrote to a block after freeing it, or freed an address twice); aborting")
        .abort()
}

/// A check of the allocator's own invariants in a debug build (`debug_assert!` without
/// the panic): stops the process with the message if `cond` does not hold.
macro_rules! debug_check {
    ($cond:expr, $msg:literal) => {
        if cfg!(debug_assertions) && !$cond {
            $crate::fatal::fatal(concat!("internal check failed: ", $msg))
        }
    };
}
pub(crate) use debug_check;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_holds_its_parts_and_hex_addresses() {
        let m = Message::new().text("free(").hex(0x7f12_3440_0010).text(")");
        assert_eq!(&m.buf[..m.len], b"handoff-alloc: free(0x7f1234400010)");
        let m = Message::new().hex(0);
        assert_eq!(&m.buf[..m.len], b"handoff-alloc: 0x0");
        let long = "x".repeat(400);
        let m = Message::new().text(&long).hex(usize::MAX);
        assert_eq!(m.len, 256, "cut at the buffer's end");
    }
}
