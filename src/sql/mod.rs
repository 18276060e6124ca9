//! sql (to be written)
