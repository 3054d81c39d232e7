export { ADMIN_TOKEN, CLI_SOURCE, Cluster, type ClusterOptions } from './cluster.js';
