import Hoard

let settings = try SettingsStore<String>(namespace: "com.example.app")
try settings.set("john", for: "username")
let username = settings.value(for: "username")       // "john", also after a restart
for await theme in settings.updates(for: "theme") { print(theme ?? "system") }

let flags = try SettingsStore<Bool>(namespace: "com.example.flags",
    configuration: .init(itemLimit: 4_096, valueByteLimit: 64))
try flags.removeAll()                                // this namespace only
