/// A change another instance made to a remote store, as seen by
/// ``RemoteCacheStore/invalidations(in:)``.
///
/// A ``Cache`` that receives one drops what it holds for the key, or everything in
/// the namespace for ``all``, from memory and its local stores; for ``missed``, from
/// memory (and from the local stores only when they have no
/// `Configuration.localExpiry` to bound how stale they can be).
public enum RemoteInvalidation: Sendable, Hashable {
    /// Another instance stored or removed the value for this key.
    case key(String)
    /// Everything in the namespace changed: another instance cleared it, or the
    /// server's data was flushed.
    case all
    /// The store lost its subscription for a while (a reconnect), or could not
    /// subscribe at once when the stream started (the server was unreachable), and
    /// may have missed changes of any key of the namespace. Unlike ``all``, nothing is known to have
    /// changed: a cache drops what is cheap to read again (its memory) and keeps
    /// the local copies that ``Cache/Configuration/localExpiry`` bounds, so that a
    /// network blip does not send every instance back to the origin at once.
    case missed
}
