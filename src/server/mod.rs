//! server (to be written)
