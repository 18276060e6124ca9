//! exec (to be written)
