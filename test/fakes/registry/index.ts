export { FakeRegistry, type RegistryRequest } from "./server.js";
