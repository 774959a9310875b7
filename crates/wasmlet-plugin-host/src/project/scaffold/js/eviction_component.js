// The component's entry: the WIT imports, and the policy as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
import { evictionWorld } from 'wasmlet-plugin-sdk/eviction';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, rank } = evictionWorld(@TYPE@, { host, podMeta });
