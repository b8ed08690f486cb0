//! Memory for the vault's data key that core dumps leave out.
//!
//! The data key decrypts every secret in the vault file, so it gets a page of its own: an
//! anonymous private mapping marked `MADV_DONTDUMP` (a core dump, should one ever be written,
//! skips it), locked in memory where the limit allows (`mlock`: never written to swap), and
//! overwritten with zeros before it is unmapped. The processes that hold it are non-dumpable with
//! a core limit of 0 as well (`sayri_sandbox::nondumpable`); this is the second wall.
//!
//! Decrypted secret values are `Zeroizing` strings on the ordinary heap: zeroed when dropped.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use zeroize::Zeroize;

use crate::VaultError;
use crate::key_source::KEY_LEN;

/// A zero-initialised `[u8; KEY_LEN]` on its own page, excluded from core dumps.
pub(crate) struct KeyPage {
    ptr: NonNull<[u8; KEY_LEN]>,
    len: usize,
    locked: bool,
}

// SAFETY: the page is owned by this value alone, like a `Box`.
unsafe impl Send for KeyPage {}
// SAFETY: shared references only read the bytes.
unsafe impl Sync for KeyPage {}

impl KeyPage {
    /// Maps and prepares the page.
    ///
    /// # Errors
    /// The kernel refused the mapping or `MADV_DONTDUMP`.
    pub(crate) fn zeroed() -> Result<Self, VaultError> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .unwrap_or(4096)
            .max(KEY_LEN);
        // SAFETY: an anonymous private mapping of `page` bytes; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(VaultError::Crypto(format!(
                "cannot map memory for the vault key: {}",
                std::io::Error::last_os_error()
            )));
        }
        let Some(ptr) = NonNull::new(p.cast::<[u8; KEY_LEN]>()) else {
            return Err(VaultError::Crypto("the kernel mapped the null page".into()));
        };
        let mut out = KeyPage {
            ptr,
            len: page,
            locked: false,
        };
        // SAFETY: advice on the mapping just created.
        if unsafe { libc::madvise(p, page, libc::MADV_DONTDUMP) } != 0 {
            return Err(VaultError::Crypto(format!(
                "cannot exclude the vault key's memory from core dumps: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: locking the mapping just created; failing (RLIMIT_MEMLOCK) is allowed.
        out.locked = unsafe { libc::mlock(p, page) } == 0;
        Ok(out)
    }

    /// A page holding a copy of `bytes`.
    ///
    /// # Errors
    /// As [`KeyPage::zeroed`].
    #[cfg(any(test, feature = "keyring"))]
    pub(crate) fn from_bytes(bytes: &[u8; KEY_LEN]) -> Result<Self, VaultError> {
        let mut k = Self::zeroed()?;
        k.copy_from_slice(bytes);
        Ok(k)
    }

    /// Whether the page is excluded from core dumps, per the kernel's own account of this
    /// process's mappings (`/proc/self/smaps`: the `dd` flag).
    #[cfg(test)]
    pub(crate) fn excluded_from_dumps(&self) -> bool {
        let start = format!("{:x}-", self.ptr.as_ptr() as usize);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let mut inside = false;
        for line in smaps.lines() {
            if line.starts_with(&start) {
                inside = true;
            } else if inside && line.starts_with("VmFlags:") {
                return line.split_whitespace().any(|f| f == "dd");
            }
        }
        false
    }
}

impl Deref for KeyPage {
    type Target = [u8; KEY_LEN];
    fn deref(&self) -> &Self::Target {
        // SAFETY: the mapping is valid, aligned and initialised (zero) for the value's life.
        unsafe { self.ptr.as_ref() }
    }
}

impl DerefMut for KeyPage {
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: as in `deref`, and `&mut self` is unique.
        unsafe { self.ptr.as_mut() }
    }
}

impl Drop for KeyPage {
    fn drop(&mut self) {
        self.deref_mut().zeroize();
        let p = self.ptr.as_ptr().cast::<libc::c_void>();
        // SAFETY: unlocking and unmapping the mapping this value owns; nothing refers to it after.
        unsafe {
            if self.locked {
                libc::munlock(p, self.len);
            }
            libc::munmap(p, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_page_is_zeroed_writable_and_left_out_of_core_dumps() {
        let mut k = KeyPage::zeroed().unwrap();
        assert_eq!(*k, [0u8; KEY_LEN]);
        k[0] = 7;
        assert_eq!(k[0], 7);
        assert!(k.excluded_from_dumps(), "no `dd` flag on the key's page");
        let copy = KeyPage::from_bytes(&k).unwrap();
        assert_eq!(copy[0], 7);
    }
}
