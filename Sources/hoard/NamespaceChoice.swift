import Foundation
import Hoard

/// Which namespace a store command works in when `--namespace` is not given.
enum NamespaceChoice {
    /// `given` when there is one; otherwise the store's only namespace (a `Cache`
    /// writes under its own name, so a cache's store usually holds one), then
    /// ``DiskStore/defaultNamespace`` when the store holds it or nothing at all.
    ///
    /// - Throws: ``StoreCommandError`` listing the namespaces when the store holds
    ///   several and none is the default.
    static func resolve(_ given: String?, in store: DiskStore) throws -> String {
        if let given { return given }
        let namespaces = try store.namespaces().keys.sorted()
        if namespaces.count == 1 { return namespaces[0] }
        if namespaces.isEmpty || namespaces.contains(DiskStore.defaultNamespace) { return DiskStore.defaultNamespace }
        let listed = namespaces.prefix(20).map { StoreFormat.quoted($0) }.joined(separator: ", ")
        let more = namespaces.count > 20 ? ", and \(namespaces.count - 20) more" : ""
        throw StoreCommandError(
            "the store holds \(namespaces.count) namespaces (\(listed)\(more)): choose one with --namespace")
    }
}
