/// A change another instance made to a remote store, as seen by
/// ``RemoteCacheStore/invalidations(in:)``.
///
/// A memory tier that receives one drops what it holds for the key, or everything in
/// the namespace for ``all``.
public enum RemoteInvalidation: Sendable, Hashable {
    /// Another instance stored or removed the value for this key.
    case key(String)
    /// Everything in the namespace may have changed: another instance cleared it, or
    /// the store lost its subscription for a while and may have missed changes.
    case all
}
