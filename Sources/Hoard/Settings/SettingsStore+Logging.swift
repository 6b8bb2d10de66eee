import Logging

extension SettingsStore {
    /// Logs one event at the level its kind deserves, with the namespace as
    /// metadata: a damaged suite file kept aside at `error` (values may be missing
    /// until someone restores them from the kept copy), a failure at `warning`, an
    /// undecodable value at `notice` (it may be another store's).
    func log(_ event: SettingsStoreEvent, to logger: Logger) {
        var metadata: Logger.Metadata = ["hoard.tier": "settings", "hoard.namespace": "\(namespace)"]
        switch event {
        case .suiteKeptAside(let damage):
            metadata["hoard.operation"] = "read suite"
            metadata["hoard.path"] = "\(damage.path)"
            metadata["hoard.keptAside"] = "\(damage.keptAsidePath)"
            metadata["hoard.error"] = "\(damage.detail)"
            logger.error("damaged settings suite file kept aside; a new file was started", metadata: metadata)
        case .undecodable(let damage):
            if let key = damage.key { metadata["hoard.key"] = "\(key.prefix(200))" }
            metadata["hoard.operation"] = "decode"
            metadata["hoard.error"] = "\(damage.detail)"
            logger.notice("settings value kept: it does not decode as the type asked for", metadata: metadata)
        case .failed(let operation, let key, let error):
            if let key { metadata["hoard.key"] = "\(key.prefix(200))" }
            metadata["hoard.operation"] = "\(operation)"
            metadata["hoard.error"] = "\(error)"
            logger.warning("\(operation) failed", metadata: metadata)
        default:
            // Only the deprecated `removedDamaged`, which is never sent.
            break
        }
    }
}
