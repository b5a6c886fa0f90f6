export { toJson } from '../contract/json.js';
