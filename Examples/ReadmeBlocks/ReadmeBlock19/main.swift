import Hoard

let storage = try LocalStorage()
for store in try storage.inventory().stores {
    print(store.name, store.entryCount, store.bytesOnDisk, store.namespaces.keys.sorted())
}
try storage.clearNamespace("thumbnails", inStore: "myapp/com.example.app")  // <program>/<store>
try storage.clearDiskStores()           // every store emptied; logs and settings stay
let report = try storage.deleteAll()    // stores, logs, settings suites
